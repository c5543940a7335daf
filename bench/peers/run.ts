/**
 * rasterflow's terrain kernels beside their native peers, in one session on the same DEM
 * (`npm run bench:peers [size] [repeats]`, default 4096 and 5): the TypeScript kernel, the
 * WebAssembly SIMD128 kernel (src/wasm), and, through /usr/bin/python3 (terrain_peers.py),
 * gdaldem's compute (GDAL's Python bindings, MEM datasets), NumPy and SciPy where they have the
 * operation. One thread each. Prints Mpx/s (median of `repeats` runs after a warm-up) and the
 * ratios to the peers; a peer that is missing is skipped with a message.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { aspect } from '../../src/functions/terrain/aspect.js';
import { hillshade } from '../../src/functions/terrain/hillshade.js';
import { slope } from '../../src/functions/terrain/slope.js';
import type { RasterFunction } from '../../src/graph/types.js';
import { wasmStatus } from '../../src/wasm/module.js';
import { demOf, kernelTask, syntheticDem } from '../terrain.bench.js';

const PYTHON = '/usr/bin/python3';
const CELL = 10;

interface PeerLine {
  readonly peer: string;
  readonly op?: string;
  readonly mpxPerSec?: number;
  readonly skipped?: string;
}

function medianMs(task: () => void, repeats: number): number {
  task();
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    task();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1]!;
}

function peers(z: Float32Array, size: number, repeats: number): PeerLine[] {
  if (!existsSync(PYTHON)) return [{ peer: 'python', skipped: `${PYTHON} not found: no native peers` }];
  const dir = mkdtempSync(join(tmpdir(), 'rasterflow-peers-'));
  try {
    const file = join(dir, 'dem.f32');
    writeFileSync(file, new Uint8Array(z.buffer, z.byteOffset, z.byteLength));
    const r = spawnSync(PYTHON, [resolve(import.meta.dirname, 'terrain_peers.py'), file, String(size), String(CELL), String(repeats)], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
      timeout: 30 * 60_000,
    });
    if (r.status !== 0) return [{ peer: 'python', skipped: `the peer script failed: ${(r.stderr || String(r.error)).trim().slice(-500)}` }];
    return r.stdout
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as PeerLine);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const fmt = (v: number | undefined, d = 1): string => (v === undefined ? '' : v.toFixed(d));

async function main(): Promise<void> {
  const size = Number(process.argv[2] ?? 4096);
  const repeats = Number(process.argv[3] ?? 5);
  const z = syntheticDem(size);
  const dem = demOf(`synthetic ${size}x${size}`, z, size, size, CELL);
  const px = (size * size) / 1e6;
  const wasm = wasmStatus();
  if (!wasm.enabled) console.log(`no wasm rows: ${wasm.detail}`);

  const peerLines = peers(z, size, repeats);
  for (const l of peerLines) if (l.skipped !== undefined) console.log(`skipped ${l.peer}: ${l.skipped}`);
  const peer = (name: string, op: string): number | undefined => peerLines.find((l) => l.peer === name && l.op === op)?.mpxPerSec;

  const ops: { op: string; fn: RasterFunction; args: Record<string, unknown> }[] = [
    { op: 'hillshade', fn: hillshade, args: {} },
    { op: 'hillshade multidirectional', fn: hillshade, args: { HillshadeType: 1 } },
    { op: 'slope', fn: slope, args: {} },
    { op: 'slope percent', fn: slope, args: { SlopeType: 2 } },
    { op: 'aspect', fn: aspect, args: {} },
  ];
  const rows = [];
  for (const { op, fn, args } of ops) {
    const ts = px / (medianMs(await kernelTask(fn, args, dem, false), repeats) / 1000);
    const wa = wasm.enabled ? px / (medianMs(await kernelTask(fn, args, dem, true), repeats) / 1000) : undefined;
    const gd = peer('gdaldem', op);
    const np = peer('numpy', op);
    const sp = peer('scipy', op);
    rows.push({
      op,
      'TS Mpx/s': fmt(ts),
      'wasm Mpx/s': fmt(wa),
      'gdaldem Mpx/s': fmt(gd),
      'TS/gdaldem': fmt(gd && ts / gd, 2),
      'wasm/gdaldem': fmt(gd && wa && wa / gd, 2),
      'NumPy Mpx/s': fmt(np),
      'wasm/NumPy': fmt(np && wa && wa / np, 2),
      'SciPy Mpx/s': fmt(sp),
      'wasm/SciPy': fmt(sp && wa && wa / sp, 2),
    });
  }
  console.log(`terrain, ${size}x${size} F32, one thread, median of ${repeats}; node ${process.version}`);
  console.table(rows);
}

await main();

/**
 * Terrain: the TypeScript kernel, the WebAssembly SIMD128 kernel (src/wasm) and, through
 * terrain_peers.py, gdaldem's compute (GDAL's Python bindings, MEM datasets), NumPy and SciPy where
 * they have the operation, on one synthetic F32 DEM.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { aspect } from '../../src/functions/terrain/aspect.js';
import { hillshade } from '../../src/functions/terrain/hillshade.js';
import { slope } from '../../src/functions/terrain/slope.js';
import type { RasterFunction } from '../../src/graph/types.js';
import { wasmStatus } from '../../src/wasm/module.js';
import { demOf, kernelTask, syntheticDem } from '../terrain.bench.js';
import { medianMs, type PeerFamily, type PeerRow, peerValue, runPython, saySkipped } from './common.js';

const CELL = 10;

export const family: PeerFamily = {
  name: 'terrain',
  async run(size, repeats, say) {
    const z = syntheticDem(size);
    const dem = demOf(`synthetic ${size}x${size}`, z, size, size, CELL);
    const px = (size * size) / 1e6;
    const wasm = wasmStatus().enabled;
    const dir = mkdtempSync(join(tmpdir(), 'rasterflow-peers-'));
    let lines;
    try {
      const file = join(dir, 'dem.f32');
      writeFileSync(file, new Uint8Array(z.buffer, z.byteOffset, z.byteLength));
      lines = runPython(resolve(import.meta.dirname, 'terrain_peers.py'), [file, String(size), String(CELL), String(repeats)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    saySkipped(lines, say);
    const ops: { op: string; fn: RasterFunction; args: Record<string, unknown> }[] = [
      { op: 'hillshade', fn: hillshade, args: {} },
      { op: 'hillshade multidirectional', fn: hillshade, args: { HillshadeType: 1 } },
      { op: 'slope', fn: slope, args: {} },
      { op: 'slope percent', fn: slope, args: { SlopeType: 2 } },
      { op: 'aspect', fn: aspect, args: {} },
    ];
    const rows: PeerRow[] = [];
    for (const { op, fn, args } of ops) {
      rows.push({
        op,
        measures: {
          TS: px / (medianMs(await kernelTask(fn, args, dem, false), repeats) / 1000),
          wasm: wasm ? px / (medianMs(await kernelTask(fn, args, dem, true), repeats) / 1000) : undefined,
          gdaldem: peerValue(lines, 'gdaldem', op),
          NumPy: peerValue(lines, 'numpy', op),
          SciPy: peerValue(lines, 'scipy', op),
        },
        ratios: [
          ['TS', 'gdaldem'],
          ['wasm', 'gdaldem'],
          ['wasm', 'NumPy'],
          ['wasm', 'SciPy'],
        ],
      });
    }
    return rows;
  },
};

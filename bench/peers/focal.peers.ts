/**
 * Focal: the TypeScript kernel, the WebAssembly SIMD128 kernel (src/wasm/focal.ts) with its planes
 * copied in and out (`wasm`) and with planes that already live in wasm memory (`wasm resident`, a
 * chain's case), and, through focal_peers.py, SciPy's ndimage and OpenCV (one thread) on the same
 * synthetic F32 raster. rasterflow's wasm paths and the peers take turns, round by round
 * (`alternating`), so a load that drifts during the run weighs on them alike; the TypeScript path
 * is timed on its own after them (see common.ts, `alternating`).
 *
 * Convolution 3x3 is Smoothing3x3, a rank-one kernel (the wasm path runs it as one fused
 * column-then-row pass); `3x3 sharpening` (Sharpening3x3, rank two) is the general 3x3 path.
 *
 * Std: the `SciPy` column is sqrt(E[x^2] - E[x]^2) from two uniform_filter passes (what a SciPy
 * user writes for speed); `SciPy generic` is generic_filter(np.std), the named peer (a
 * Python call per pixel, timed on a crop). The std target ratio is taken against the former, the
 * stricter one.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { RasterInfo } from '../../src/core/pixel-block.js';
import { convolution } from '../../src/functions/focal/convolution.js';
import { statistics } from '../../src/functions/focal/statistics.js';
import type { RasterFunction } from '../../src/graph/types.js';
import { wasmStatus } from '../../src/wasm/module.js';
import { type FocalPath, focalKernelTask, type FocalTask } from '../focal.bench.js';
import { syntheticDem } from '../terrain.bench.js';
import { alternating, type PeerFamily, type PeerRow, PeerServer, rates, type Timer, wallMs } from './common.js';

export const family: PeerFamily = {
  name: 'focal',
  async run(size, repeats, say) {
    const z = syntheticDem(size);
    const info: RasterInfo = {
      width: size,
      height: size,
      bandCount: 1,
      pixelType: 'F32',
      extent: { xmin: 0, ymin: 0, xmax: size * 10, ymax: size * 10 },
      cellSize: { x: 10, y: 10 },
      spatialReference: { wkid: 32616, metersPerUnit: 1 },
    };
    const px = (size * size) / 1e6;
    const wasm = wasmStatus().enabled;
    const ops: { op: string; fn: RasterFunction; args: Record<string, unknown> }[] = [
      { op: 'convolution 3x3', fn: convolution, args: { Type: 11 } },
      { op: 'convolution 3x3 sharpening', fn: convolution, args: { Type: 13 } },
      { op: 'convolution 5x5', fn: convolution, args: { Type: 12 } },
      { op: 'convolution 9x9 separable', fn: convolution, args: { Columns: 9, Rows: 9, Kernel: Array(81).fill(1) } },
      { op: 'mean 3x3', fn: statistics, args: { Type: 3 } },
      { op: 'std 3x3', fn: statistics, args: { Type: 4 } },
      { op: 'min 3x3', fn: statistics, args: { Type: 1 } },
      { op: 'max 3x3', fn: statistics, args: { Type: 2 } },
    ];
    const rows: PeerRow[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'rasterflow-peers-'));
    let peers: PeerServer | undefined;
    try {
      const file = join(dir, 'raster.f32');
      writeFileSync(file, new Uint8Array(z.buffer, z.byteOffset, z.byteLength));
      peers = await PeerServer.start(resolve(import.meta.dirname, 'focal_peers.py'), [file, String(size)]);
      for (const { op, fn, args } of ops) {
        const paths: FocalPath[] = wasm ? ['ts', 'wasm', 'resident'] : ['ts'];
        const tasks: FocalTask[] = [];
        let ms;
        try {
          const timers: Record<FocalPath, Timer | undefined> = { ts: undefined, wasm: undefined, resident: undefined };
          for (const path of paths) {
            const t = await focalKernelTask(fn, args, info, z, path);
            if (t !== undefined) tasks.push(t);
            timers[path] = t && wallMs(t.run);
          }
          const { ts, ...wasmPaths } = timers;
          const alt = await alternating(
            {
              ...wasmPaths,
              scipy: peers.timer('scipy', op),
              'scipy-generic': peers.timer('scipy-generic', op),
              opencv: peers.timer('opencv', op),
            },
            repeats,
          );
          ms = rates(px, { ...alt, ...(await alternating({ ts }, repeats)) });
        } finally {
          for (const t of tasks) t.dispose();
        }
        const std = op.startsWith('std');
        rows.push({
          op,
          measures: {
            TS: ms.ts,
            wasm: ms.wasm,
            'wasm resident': ms.resident,
            SciPy: ms.scipy,
            ...(std ? { 'SciPy generic': ms['scipy-generic'] } : {}),
            OpenCV: ms.opencv,
          },
          ratios: [
            ['wasm', 'TS'],
            ['wasm', 'SciPy'],
            ['wasm resident', 'SciPy'],
            ...(std ? ([['wasm', 'SciPy generic']] as const) : []),
            ['wasm', 'OpenCV'],
            ['wasm resident', 'OpenCV'],
          ],
        });
      }
      peers.saySkipped(say);
    } finally {
      peers?.close();
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};

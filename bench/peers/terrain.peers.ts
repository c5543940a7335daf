/**
 * Terrain: the TypeScript kernel, the WebAssembly SIMD128 kernel (src/wasm) and, through
 * terrain_peers.py, gdaldem's compute (GDAL's Python bindings, MEM datasets), NumPy and SciPy where
 * they have the operation, on one synthetic F32 DEM, and the same DEM rounded to S16 (rows "... S16",
 * where gdaldem has the operation). Curvature's peer is NumPy: the Zevenbergen-Thorne polynomial
 * that rasterflow's Curvature computes, written with array slices in float64 (gdaldem has no
 * curvature). The wasm paths and the peers take turns, round by round (`alternating`); the
 * TypeScript kernel is timed on its own after them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { aspect } from '../../src/functions/terrain/aspect.js';
import { curvature } from '../../src/functions/terrain/curvature.js';
import { hillshade } from '../../src/functions/terrain/hillshade.js';
import { slope } from '../../src/functions/terrain/slope.js';
import type { RasterFunction } from '../../src/graph/types.js';
import { grow, rect } from '../../src/core/rect.js';
import { memorySource } from '../../src/graph/memory-source.js';
import { wasmKernels, wasmStatus } from '../../src/wasm/module.js';
import { inWasmMemory, TileBlocks } from '../../src/wasm/planes.js';
import { applyFunction } from '../../test/helpers.js';
import { type Dem, demOf, kernelTask, syntheticDem } from '../terrain.bench.js';
import { alternating, type PeerFamily, type PeerRow, PeerServer, type PlacedTimer, rates, wallMs } from './common.js';

const CELL = 10;

/**
 * The wasm path with the DEM's planes (its band and its mask) and the output's already in wasm
 * memory, allocated as the evaluator allocates a render's tiles (`TileBlocks`): what a kernel call
 * costs without the copies in and out. Undefined when they do not fit the evaluator's budget.
 */
async function residentTimer(fn: RasterFunction, args: Record<string, unknown>, dem: Dem): Promise<PlacedTimer | undefined> {
  const k = wasmKernels();
  if (k === undefined) return undefined;
  const source = memorySource(`bench:${dem.name}`, dem.info, [dem.z]);
  const node = applyFunction(fn, args, [source]);
  const whole = rect(0, 0, dem.info.width, dem.info.height);
  const read = await source.read(grow(whole, node.plan.halo));
  const blocks = new TileBlocks(k);
  const input = blocks.allocate(read.rect, read.pixelType, 1);
  input.bands[0]!.set(read.bands[0]! as never);
  input.mask.set(read.mask);
  const out = blocks.allocate(whole, node.info.pixelType, 1);
  const planes = [...input.bands, input.mask, ...out.bands];
  if (!inWasmMemory(input) || !planes.every((p) => p.buffer === k.arena.buffer)) {
    blocks.release();
    return undefined;
  }
  return { run: wallMs(() => fn.kernel(node.plan.params, [input], out)), dispose: () => blocks.release() };
}

export const family: PeerFamily = {
  name: 'terrain',
  async run(size, repeats, say) {
    const z = syntheticDem(size);
    const dem = demOf(`synthetic ${size}x${size}`, z, size, size, CELL);
    const z16 = Int16Array.from(z, (v) => Math.round(v));
    const dem16 = demOf(`synthetic S16 ${size}x${size}`, z16, size, size, CELL);
    const px = (size * size) / 1e6;
    const wasm = wasmStatus().enabled;
    const ops: { op: string; fn: RasterFunction; args: Record<string, unknown>; s16?: boolean }[] = [
      { op: 'hillshade', fn: hillshade, args: {} },
      { op: 'hillshade multidirectional', fn: hillshade, args: { HillshadeType: 1 } },
      { op: 'slope', fn: slope, args: {} },
      { op: 'slope percent', fn: slope, args: { SlopeType: 2 } },
      { op: 'aspect', fn: aspect, args: {} },
      { op: 'curvature standard', fn: curvature, args: { Type: 0 } },
      { op: 'curvature profile', fn: curvature, args: { Type: 1 } },
      { op: 'curvature planform', fn: curvature, args: { Type: 2 } },
      { op: 'hillshade S16', fn: hillshade, args: {}, s16: true },
      { op: 'slope S16', fn: slope, args: {}, s16: true },
      { op: 'aspect S16', fn: aspect, args: {}, s16: true },
    ];
    const rows: PeerRow[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'rasterflow-peers-'));
    let peers: PeerServer | undefined;
    try {
      const file = join(dir, 'dem.f32');
      const file16 = join(dir, 'dem.s16');
      writeFileSync(file, new Uint8Array(z.buffer, z.byteOffset, z.byteLength));
      writeFileSync(file16, new Uint8Array(z16.buffer, z16.byteOffset, z16.byteLength));
      peers = await PeerServer.start(resolve(import.meta.dirname, 'terrain_peers.py'), [file, file16, String(size), String(CELL)]);
      for (const { op, fn, args, s16 } of ops) {
        const input = s16 === true ? dem16 : dem;
        const resident = wasm ? await residentTimer(fn, args, input) : undefined;
        let ms;
        try {
          const alt = await alternating(
            {
              wasm: wasm ? wallMs(await kernelTask(fn, args, input, true)) : undefined,
              'wasm resident': resident?.run,
              gdaldem: peers.timer('gdaldem', op),
              NumPy: peers.timer('numpy', op),
              SciPy: peers.timer('scipy', op),
            },
            repeats,
          );
          ms = { ...(await alternating({ TS: wallMs(await kernelTask(fn, args, input, false)) }, repeats)), ...alt };
        } finally {
          resident?.dispose();
        }
        rows.push({
          op,
          measures: rates(px, ms),
          ratios: [
            ['TS', 'gdaldem'],
            ['wasm', 'gdaldem'],
            ['wasm resident', 'gdaldem'],
            ['wasm', 'TS'],
            ['wasm', 'NumPy'],
            ['wasm', 'SciPy'],
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

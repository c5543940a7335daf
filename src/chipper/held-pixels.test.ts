/**
 * Chips rendered into the memory the renderer lends (renderChipHeld: planes in wasm memory until
 * released): the export gives every tile back, when it ends and when it is stopped half-way, and
 * writes the same folder as with planes in ordinary memory.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { setResidentPlanes, tileBlocksInUse } from '../wasm/planes.js';
import { wasmKernels } from '../wasm/module.js';
import { exportTrainingData } from './export.js';

const ROOT = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'rf-chip-held-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const params = (out: string, format = 'PASCAL_VOC_rectangles'): Record<string, unknown> => ({
  inputRaster: join(ROOT, 'golden/data/L7_ETMs.tif'),
  inputClassData: join(ROOT, 'golden/chipper/l7-labels.geojson'),
  outputLocation: join(dir, out),
  tileSize: { x: 64, y: 64 },
  strideSize: { x: 48, y: 48 },
  metadataFormat: format,
  context: { exportAllTiles: true },
});

/** Every file below `root` (relative path -> bytes). */
function files(root: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const f of readdirSync(root, { recursive: true, withFileTypes: true }))
    if (f.isFile()) out.set(join(f.parentPath, f.name).slice(root.length), readFileSync(join(f.parentPath, f.name)));
  return out;
}

describe('chips held in lent memory', () => {
  for (const format of ['PASCAL_VOC_rectangles', 'Classified_Tiles']) {
    it(`${format}: the same folder as with planes in ordinary memory, every tile given back`, async () => {
      const before = tileBlocksInUse();
      const held = await exportTrainingData(params(`held-${format}`, format));
      expect(tileBlocksInUse()).toBe(before);
      const was = setResidentPlanes(false);
      try {
        await exportTrainingData(params(`plain-${format}`, format));
      } finally {
        setResidentPlanes(was);
      }
      expect(held.chips).toBeGreaterThan(50);
      const a = files(join(dir, `held-${format}`));
      const b = files(join(dir, `plain-${format}`));
      expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
      for (const [name, bytes] of a) expect(bytes.equals(b.get(name)!), name).toBe(true);
    });
  }

  it('an export stopped half-way gives back the chips it had rendered ahead', async () => {
    const before = tileBlocksInUse();
    const stop = new AbortController();
    let reports = 0;
    await expect(
      exportTrainingData(params('stopped'), {
        signal: stop.signal,
        onProgress: () => {
          if (++reports === 20) stop.abort();
        },
      }),
    ).rejects.toMatchObject({ code: 'ABORTED' });
    // The chips rendered ahead settle after the stop: give them a few turns.
    for (let i = 0; i < 20 && tileBlocksInUse() !== before; i++) await new Promise((r) => setTimeout(r, 10));
    expect(tileBlocksInUse()).toBe(before);
  });

  it('the tiles were lent (wasm memory) unless the kernels are off', async () => {
    let most = 0;
    const before = tileBlocksInUse();
    await exportTrainingData(params('lent'), { onProgress: () => void (most = Math.max(most, tileBlocksInUse() - before)) });
    expect(most > 0).toBe(wasmKernels() !== undefined);
  });
});

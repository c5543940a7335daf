/**
 * A chip's journal line is written synchronously, and its pixels are often ready when it is consumed:
 * the export loop turns the event loop between chips, so a server running an export (a GP job) still answers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exportTrainingData } from './export.js';

const ROOT = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'rf-chip-turns-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the export and the event loop', () => {
  it('turns the event loop between every two chips', async () => {
    let turns = 0;
    let running = true;
    const tick = (): void => {
      if (!running) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    // The turns seen by each candidate's progress report: each one more than the report before.
    const seen: number[] = [];
    const s = await exportTrainingData(
      {
        inputRaster: join(ROOT, 'golden/data/L7_ETMs.tif'),
        inputClassData: join(ROOT, 'golden/chipper/l7-labels.geojson'),
        outputLocation: join(dir, 'out'),
        tileSize: { x: 16, y: 16 },
        metadataFormat: 'PASCAL_VOC_rectangles',
        context: { exportAllTiles: true },
      },
      { onProgress: () => void seen.push(turns) },
    ).finally(() => {
      running = false;
    });
    expect(s.chips).toBe(484);
    expect(seen.length).toBe(485); // each candidate, then the end
    const without = seen.slice(1).filter((t, i) => t <= seen[i]!).length;
    expect(without, 'chips written with no turn of the event loop since the chip before').toBe(0);
  });
});

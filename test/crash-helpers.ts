/** Shared by the crash tests of chip exports: the export they run, folder trees compared byte for byte, the resume journal read. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { expect } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
/** 484 chips of 16 x 16 pixels, four files each (TIFF, world file, .aux.xml, PASCAL VOC XML). */
export const CRASH_CHIP_PARAMS = {
  inputRaster: join(ROOT, 'golden/data/L7_ETMs.tif'),
  inputClassData: join(ROOT, 'golden/chipper/l7-labels.geojson'),
  tileSize: { x: 16, y: 16 },
  strideSize: { x: 16, y: 16 },
  metadataFormat: 'PASCAL_VOC_rectangles',
  context: { exportAllTiles: true },
};
export const JOURNAL = '.rasterflow-journal.ndjson';
/** A file under its temporary name (files.ts writeAtomic). */
export const TEMPORARY = /\.part-\d+$/;

/** Every file below `root`: relative path -> bytes. */
export function tree(root: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else files.set(relative(root, p), readFileSync(p));
    }
  };
  walk(root);
  return files;
}

/** Names and bytes of two trees, compared; answers the bytes compared. */
export function expectSameTree(actual: string, expected: string): number {
  const a = tree(actual);
  const b = tree(expected);
  expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
  let bytes = 0;
  for (const [name, data] of b) {
    expect(a.get(name)?.equals(data), `${name} has the bytes of the uninterrupted export`).toBe(true);
    bytes += data.length;
  }
  return bytes;
}

/** The chips a journal lists (the head line and a line cut by the kill are not chips). */
export function journalChips(out: string): { index: number; image: string }[] {
  const path = join(out, JOURNAL);
  if (!existsSync(path)) return [];
  const chips: { index: number; image: string }[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n').slice(1)) {
    try {
      const e = JSON.parse(line) as { index?: unknown; image?: unknown };
      if (typeof e.index === 'number' && typeof e.image === 'string') chips.push({ index: e.index, image: e.image });
    } catch {
      // cut by the kill
    }
  }
  return chips;
}

/**
 * Every chip the journal lists has all of its files (those of the same stem in the reference) with
 * the reference's bytes: a resume never trusts a chip that is incomplete. Answers the files checked.
 */
export function expectJournalTrustworthy(out: string, reference: Map<string, Buffer>): number {
  const chips = journalChips(out);
  let checked = 0;
  for (const c of chips) {
    const stem = basename(c.image).replace(/\.[^.]+$/, '');
    const own = [...reference.keys()].filter((k) => basename(k).startsWith(`${stem}.`));
    expect(own.length, `chip ${stem} has files in the reference`).toBeGreaterThan(0);
    for (const k of own) {
      const p = join(out, k);
      expect(existsSync(p), `${k} of journalled chip ${stem} exists`).toBe(true);
      expect(readFileSync(p).equals(reference.get(k)!), `${k} of journalled chip ${stem} is complete`).toBe(true);
      checked++;
    }
  }
  return checked;
}

/** Whether a temporary file is anywhere below `out`. */
export const temporaries = (out: string): string[] => {
  try {
    return readdirSync(out, { recursive: true })
      .map(String)
      .filter((f) => TEMPORARY.test(f));
  } catch {
    return [];
  }
};

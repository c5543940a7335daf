/**
 * Shared by the crash tests: a `rasterflow serve` child and an administrator token for it, the chip
 * export they run, folder trees compared byte for byte, the resume journal read.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { ADMIN_AUDIENCE } from '../src/adapters/auth.js';
import { createKeyRing, issueToken, systemClock, type KeyRingData } from '../src/adapters/tokens.js';
import { openSqliteStore } from '../src/server/sqlite-store.js';
import { httpCall, spawnChild, type Child, type SimpleResponse } from './serve-helpers.js';

/** The Referer the crash tests' tokens are bound to. */
export const REFERER = 'https://crash-test.local';

export interface Running {
  readonly child: Child;
  readonly url: string;
  readonly ca: string;
  /** When the server said it listens (performance.now()). */
  readonly readyAt: number;
}

/** `rasterflow serve` (the test entry) on `dataDir`, port 0; `extraEnv` values undefined are removed. */
export async function startServe(dataDir: string, children: Child[], extraEnv: Record<string, string | undefined> = {}): Promise<Running> {
  const env: NodeJS.ProcessEnv = { ...process.env, RASTERFLOW_ADMIN_PASSWORD: 'crash-admin-pw' };
  for (const [k, v] of Object.entries(extraEnv)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const child = spawnChild('test/serve-entry.ts', ['serve', '--port', '0', '--data', dataDir], env);
  children.push(child);
  const m = await child.waitFor(/services: (https:\/\/127\.0\.0\.1:\d+)\/server\/rest\/services/);
  await child.waitFor(/SIGINT or SIGTERM stops/);
  return { child, url: m[1]!, ca: readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8'), readyAt: performance.now() };
}

/** An administrator token signed with the site's key ring, read from its database as a second process would. */
export async function siteAdminToken(dataDir: string): Promise<string> {
  const store = openSqliteStore(join(dataDir, 'site.db'));
  try {
    const ring = createKeyRing(systemClock, await store.getSetting<KeyRingData>('signingKeys'));
    return await issueToken(ring, {
      subject: 'admin',
      audience: ADMIN_AUDIENCE,
      binding: { kind: 'referer', value: REFERER },
      expiresAt: Date.now() + 3_600_000,
    });
  } finally {
    await store.close();
  }
}

/** A form POST (f=json) to the server, with the Referer the token is bound to. */
export const postForm = (s: Running, path: string, form: Record<string, string>): Promise<SimpleResponse> =>
  httpCall(`${s.url}${path}`, { ca: s.ca, body: new URLSearchParams({ f: 'json', ...form }).toString(), headers: { referer: REFERER } });

/** `PRAGMA integrity_check` of the site database. */
export function integrity(dataDir: string): unknown {
  const db = new Database(join(dataDir, 'site.db'), { readonly: true });
  try {
    return db.pragma('integrity_check', { simple: true });
  } finally {
    db.close();
  }
}

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

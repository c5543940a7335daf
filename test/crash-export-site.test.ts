/**
 * kill -9 during `exportSite` (issue 20 item 4): a `rasterflow serve` child takes administrator
 * writes, starts a site export that the test entry pauses (before the archive is written, then with
 * the archive written under its temporary name) and is SIGKILLed there. Restarted on the same data
 * folder: admin writes work again at once (the server releases the lease its own killed run left;
 * anything else would wait for the 30 s lease), every acknowledged write is there, the database
 * passes `PRAGMA integrity_check`, and no half-written archive is where a download would find it.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EXPORT_LOCK_TTL_MS } from '../src/adapters/admin/export-site.js';
import { SITE_BACKUP_LOCK } from '../src/adapters/site.js';
import { openSqliteStore } from '../src/server/sqlite-store.js';
import { integrity, postForm, REFERER, siteAdminToken, startServe, type Running } from './crash-helpers.js';
import { httpCall, type Child } from './serve-helpers.js';

const USERS_ADD = '/server/admin/security/users/add';
const EXPORT = '/server/admin/exportSite';
const BUSY = 'A site backup is in progress. Configuration changes are not allowed until it completes.';

const children: Child[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const start = (dataDir: string, pause?: 'write' | 'rename'): Promise<Running> =>
  startServe(dataDir, children, { RASTERFLOW_TEST_EXPORT_PAUSE: pause });
const adminToken = siteAdminToken;
const post = postForm;

async function addUser(s: Running, token: string, username: string): Promise<unknown> {
  const res = await post(s, USERS_ADD, { username, password: `${username}-pw`, role: 'user', token });
  return JSON.parse(res.body) as unknown;
}

async function storedUsers(dataDir: string): Promise<Set<string>> {
  const store = openSqliteStore(join(dataDir, 'site.db'));
  try {
    return new Set((await store.listUsers()).map((u) => u.username));
  } finally {
    await store.close();
  }
}

describe('kill -9 during exportSite', { timeout: 120_000 }, () => {
  it('a restarted server takes admin writes at once, keeps every acknowledged write, and no partial archive is served', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rf-crash-export-'));
    dirs.push(dataDir);
    const downloads = join(dataDir, 'site-exports');
    const acknowledged: string[] = [];
    let token = '';
    let kills = 0;

    for (const pause of ['write', 'rename'] as const) {
      const s = await start(dataDir, pause);
      if (token === '') token = await adminToken(dataDir);
      for (let i = 0; i < 10; i++) {
        const name = `before-${pause}-${i}`;
        expect(await addUser(s, token, name)).toEqual({ status: 'success' });
        acknowledged.push(name);
      }
      // The export takes the lease and stops at the pause; it never answers.
      const exporting = post(s, EXPORT, { token }).catch(() => 'connection lost with the server');
      await s.child.waitFor(new RegExp(`test: site export paused at ${pause}`));
      // Meanwhile admin writes are refused (not acknowledged) and a second export too.
      expect(await addUser(s, token, `refused-${pause}`)).toEqual({ status: 'error', messages: [BUSY], code: 409 });
      expect(JSON.parse((await post(s, EXPORT, { token })).body)).toEqual({ status: 'error', messages: [BUSY], code: 409 });
      if (pause === 'rename') {
        // The archive is complete under its temporary name: never a name a download serves.
        const names = readdirSync(downloads);
        expect(names.filter((n) => n.endsWith('.agssite'))).toEqual([]);
        expect(names.some((n) => /^\.partial-\d+-[0-9a-f-]+\.tmp$/.test(n))).toBe(true);
      }
      s.child.proc.kill('SIGKILL');
      expect(await s.child.exited).toBe('SIGKILL');
      expect(await exporting).toBe('connection lost with the server');
      kills++;

      // As the kill left it: the database intact, the lease still recorded, no archive under a final name.
      expect(integrity(dataDir)).toBe('ok');
      const db = new Database(join(dataDir, 'site.db'), { readonly: true });
      const lock = db.prepare('SELECT holder, expires FROM locks WHERE name = ?').get(SITE_BACKUP_LOCK) as { holder: string } | undefined;
      db.close();
      expect(lock?.holder).toMatch(/^exportSite:host=.*;pid=\d+;run=/);
      expect(readdirSync(downloads).filter((n) => n.endsWith('.agssite'))).toEqual([]);
    }

    // Restart without the pause: the lease of the killed run is released at start-up.
    const s = await start(dataDir);
    expect(s.child.stderr()).toContain('released the site backup lock left by an earlier run');
    expect(await addUser(s, token, 'after-restart')).toEqual({ status: 'success' });
    const blockedMs = performance.now() - s.readyAt;
    expect(blockedMs).toBeLessThan(EXPORT_LOCK_TTL_MS);
    acknowledged.push('after-restart');
    const users = await storedUsers(dataDir);
    const found = acknowledged.filter((u) => users.has(u));
    expect(found).toEqual(acknowledged);
    expect(users.has('refused-write') || users.has('refused-rename')).toBe(false);

    // The temporary file is no download; a new export succeeds, removes it, and is served.
    const temp = readdirSync(downloads).find((n) => n.startsWith('.partial-'))!;
    const tempRes = await httpCall(`${s.url}${EXPORT}/download/${encodeURIComponent(temp)}?token=${token}`, {
      ca: s.ca,
      headers: { referer: REFERER },
    });
    expect(JSON.parse(tempRes.body)).toMatchObject({ status: 'error', code: 404 });
    const done = JSON.parse((await post(s, EXPORT, { token })).body) as { status: string; location: string };
    expect(done.status).toBe('success');
    expect(readdirSync(downloads).filter((n) => n.startsWith('.partial-'))).toEqual([]);
    const archive = await httpCall(`${done.location}?token=${token}`, { ca: s.ca, headers: { referer: REFERER } });
    expect(archive.status).toBe(200);
    expect(archive.headers['content-type']).toBe('application/zip');

    s.child.proc.kill('SIGTERM');
    expect(await s.child.exited).toBe(0);
    expect(integrity(dataDir)).toBe('ok');
    console.log(
      `exportSite kill -9: ${kills} kills survived (paused before the write, and with the archive under its temporary name); ` +
        `${acknowledged.length} writes acknowledged, ${found.length} found; admin writes accepted ${blockedMs.toFixed(0)} ms after the restart`,
    );
  });
});

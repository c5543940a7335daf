import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  adminPost,
  adminSite,
  adminToken,
  entriesOf,
  populate,
  PRIMARY,
  PRIMARY_PASSWORD,
  tempDir,
} from '../../../test/site-archive-fixtures.js';
import { jsonOf, PORTAL_AUDIENCE, siteRequest, type TestSite } from '../../../test/site.js';
import { verifyPassword } from '../auth.js';
import {
  clearOwnStaleSiteBackupLock,
  downloadHandler,
  EXPORT_LOCK_TTL_MS,
  siteBackupHolder,
  exportSiteHandler,
  exportSiteRoutes,
  type ExportSiteDeps,
  type ExportSiteOptions,
} from './export-site.js';
import { importSiteHandler } from './import-site.js';
import { DOWNLOAD_LIFETIME_MS, downloadDir } from './site-archive.js';
import { assertNoSiteBackup, SITE_BACKUP_LOCK } from '../site.js';

const EXPORT = '/server/admin/exportSite';
const NAME = '20260115-120000-UTC.agssite'; // manualClock starts at 2026-01-15T12:00:00Z
const NOT_ACCESSIBLE = (p: string) =>
  `The location '${p}' is not accessible. It must be accessible and writable by the server's service account.`;
const BUSY = 'A site backup is in progress. Configuration changes are not allowed until it completes.';

const deps = (site: TestSite, options: ExportSiteOptions = {}, ports?: Record<string, number>): ExportSiteDeps => ({
  ...site,
  options,
  ...(ports ? { ports } : {}),
});

async function exportOnce(site: TestSite, form: Record<string, string>, options: ExportSiteOptions = {}) {
  const res = await exportSiteHandler(deps(site, options))(adminPost(EXPORT, form, await adminToken(site)));
  return { res, body: await jsonOf(res) };
}

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('exportSite: method, transport and caller (§0, §6)', () => {
  it('GET answers 405 in the admin shape', async () => {
    const site = await adminSite();
    const res = await exportSiteHandler(site)(siteRequest(`${EXPORT}?f=json&token=${await adminToken(site)}`));
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual({ status: 'error', messages: ['Method not supported.'], code: 405 });
  });

  it('plain HTTP is refused when allSSL is on, accepted when off', async () => {
    const site = await adminSite({ allSSL: true });
    const token = await adminToken(site);
    const req = siteRequest(EXPORT, { scheme: 'http', form: { f: 'json', token, validate: 'true' } });
    expect(await jsonOf(await exportSiteHandler(site)(req))).toEqual({ status: 'error', messages: ['SSL Required'], code: 403 });
    const open = await adminSite();
    const ok = siteRequest(EXPORT, { scheme: 'http', form: { f: 'json', token: await adminToken(open), validate: 'true' } });
    expect(await jsonOf(await exportSiteHandler(open)(ok))).toEqual({ status: 'success' });
  });

  it('needs a token (499), a valid one (498), and the default administrator role (403)', async () => {
    const site = await adminSite();
    const h = exportSiteHandler(site);
    expect(await jsonOf(await h(adminPost(EXPORT, { validate: 'true' })))).toEqual({
      status: 'error',
      messages: ["Unauthorized access. Token not found. You can generate a token using the 'generateToken' operation."],
      code: 499,
    });
    expect(await jsonOf(await h(adminPost(EXPORT, { validate: 'true' }, 'garbage')))).toMatchObject({ status: 'error', code: 498 });
    const publisher = await site.token('pub', { audience: PORTAL_AUDIENCE });
    expect(await jsonOf(await h(adminPost(EXPORT, { validate: 'true' }, publisher)))).toEqual({
      status: 'error',
      messages: ['You do not have permissions to access this resource or perform this operation.'],
      code: 403,
    });
    const serverToken = await site.token('ops', { audience: 'server:https://localhost/server' });
    expect(await jsonOf(await h(adminPost(EXPORT, { validate: 'true' }, serverToken)))).toMatchObject({ code: 498 });
    // Admin and portal audiences both work; the token may also travel in a header.
    for (const audience of ['admin', PORTAL_AUDIENCE]) {
      const t = await site.token('ops', { audience });
      const req = siteRequest(EXPORT, { form: { f: 'json', validate: 'true' }, headers: { authorization: `Bearer ${t}` } });
      expect(await jsonOf(await h(req))).toEqual({ status: 'success' });
    }
  });

  it('answers html by default (the operation page with its form), pjson pretty', async () => {
    const site = await adminSite();
    const token = await adminToken(site);
    const html = await exportSiteHandler(site)(siteRequest(EXPORT, { form: { token, validate: 'true' } }));
    expect(html.headers.get('content-type')).toContain('text/html');
    const text = await html.text();
    expect(text).toContain('<form method="post" action="/server/admin/exportSite"');
    expect(text).toContain('name="location"');
    expect(text).toContain('&#34;status&#34;: &#34;success&#34;');
    const pjson = await exportSiteHandler(site)(adminPost(EXPORT, { f: 'pjson', validate: 'true' }, token));
    expect(await pjson.text()).toBe('{\n  "status": "success"\n}');
  });

  it('an unknown f is refused in the admin shape before anything is written', async () => {
    const site = await adminSite();
    const { body } = await exportOnce(site, { f: 'xml', location: site.config.dataDir });
    expect(body).toEqual({ status: 'error', messages: ["'f' must be one of html, json, pjson."], code: 400 });
    expect(readdirSync(site.config.dataDir).filter((n) => n.endsWith('.agssite'))).toEqual([]);
    expect(existsSync(downloadDir(site.config))).toBe(false);
  });

  it('exportSiteRoutes mounts the export and the download', () => {
    return adminSite().then((site) => {
      expect(exportSiteRoutes(site).map((r) => [r.method, r.path])).toEqual([
        ['ALL', '/server/admin/exportSite'],
        ['ALL', '/server/admin/exportSite/download/:name'],
      ]);
    });
  });
});

describe('exportSite: validate (§3.2)', () => {
  it("takes true/false in any case; anything else is 400 'validate' must be true or false.", async () => {
    const site = await adminSite();
    const dir = tempDir();
    const config = { ...site.config, writableRoots: [dir] };
    const s = { ...site, config };
    const token = await adminToken(site);
    for (const v of ['TRUE', 'True', 'true']) {
      expect(await jsonOf(await exportSiteHandler(s)(adminPost(EXPORT, { location: dir, validate: v }, token)))).toEqual({
        status: 'success',
      });
    }
    for (const v of ['yes', '1', 'on', 'truthy']) {
      expect(await jsonOf(await exportSiteHandler(s)(adminPost(EXPORT, { location: dir, validate: v }, token)))).toEqual({
        status: 'error',
        messages: ["'validate' must be true or false."],
        code: 400,
      });
    }
    expect(readdirSync(dir)).toEqual([]);
    // false (any case) exports.
    const res = await jsonOf(await exportSiteHandler(s)(adminPost(EXPORT, { location: dir, validate: 'FALSE' }, token)));
    expect(res).toEqual({ status: 'success', location: join(dir, NAME) });
  });

  it('validate=true on a usable folder answers success and writes nothing', async () => {
    const site = await adminSite();
    const dir = join(site.config.dataDir, 'backups');
    mkdirSync(dir);
    const { body } = await exportOnce(site, { location: dir, validate: 'true' });
    expect(body).toEqual({ status: 'success' });
    expect(readdirSync(dir)).toEqual([]);
    expect(existsSync(downloadDir(site.config)) ? readdirSync(downloadDir(site.config)) : []).toEqual([]);
  });

  it('validate=true on a missing folder, a file, or a folder where nothing can be created: code 500 with the sentence', async () => {
    const site = await adminSite({ writableRoots: ['/proc'] });
    const missing = join(site.config.dataDir, 'nope');
    const file = join(site.config.dataDir, 'plain.txt');
    writeFileSync(file, 'x');
    const cases = [missing, file];
    // /proc/self is a directory that passes access(W_OK) for root but refuses new files: only the probe sees it.
    if (process.platform === 'linux') cases.push('/proc/self');
    for (const location of cases) {
      const { res, body } = await exportOnce(site, { location, validate: 'true' });
      expect(res.status).toBe(200);
      expect(body).toEqual({ status: 'error', messages: [NOT_ACCESSIBLE(location)], code: 500 });
    }
  });

  it('validate=true without location checks the server-owned export folder', async () => {
    const site = await adminSite();
    const { body } = await exportOnce(site, { validate: 'true' });
    expect(body).toEqual({ status: 'success' });
    expect(readdirSync(downloadDir(site.config))).toEqual([]);
  });
});

describe('exportSite: location (§3.2 path safety, names, atomic writes)', () => {
  it('writes <yyyyMMdd>-<HHmmss>-UTC.agssite (export start, UTC, from the clock) and answers its full path', async () => {
    const site = await adminSite();
    site.clock.set(Date.UTC(2025, 4, 14, 9, 30, 12, 999));
    const dir = join(site.config.dataDir, 'b');
    mkdirSync(dir);
    const { body } = await exportOnce(site, { location: dir + '/' });
    expect(body).toEqual({ status: 'success', location: `${dir}/20250514-093012-UTC.agssite` });
    expect(readdirSync(dir)).toEqual(['20250514-093012-UTC.agssite']);
    const entries = entriesOf(readFileSync(join(dir, '20250514-093012-UTC.agssite')));
    expect(JSON.parse(entries['manifest.json']!).created).toBe('2025-05-14T09:30:12.999Z');
  });

  it('appends -1, -2 ... when the name exists', async () => {
    const site = await adminSite();
    const dir = tempDir();
    const s = { ...site, config: { ...site.config, writableRoots: [dir] } };
    const token = await adminToken(site);
    const names: string[] = [];
    for (let i = 0; i < 3; i++) {
      const body = await jsonOf(await exportSiteHandler(s)(adminPost(EXPORT, { location: dir }, token)));
      names.push(String(body['location']));
    }
    expect(names).toEqual([join(dir, NAME), join(dir, '20260115-120000-UTC-1.agssite'), join(dir, '20260115-120000-UTC-2.agssite')]);
    expect(readdirSync(dir).sort()).toEqual(['20260115-120000-UTC-1.agssite', '20260115-120000-UTC-2.agssite', NAME]);
  });

  it('refuses relative paths, .. segments, paths outside the allowed roots and symlinks leading out, naming the path', async () => {
    const outside = tempDir('rf-outside-');
    const root = tempDir('rf-root-');
    const site = await adminSite({ writableRoots: [root] });
    symlinkSync(outside, join(root, 'escape'));
    const cases: [string, string][] = [
      ['backups', `The location 'backups' must be an absolute path.`],
      ['./x', `The location './x' must be an absolute path.`],
      [`${root}/../${root.split('/').pop()!}`, `The location '${root}/../${root.split('/').pop()!}' must not contain '..' segments.`],
      [`${site.config.dataDir}/a/../b`, `The location '${site.config.dataDir}/a/../b' must not contain '..' segments.`],
      [
        outside,
        `The location '${outside}' is outside the folders this server may write to (its data folder and the configured writable roots).`,
      ],
      ['/etc', `The location '/etc' is outside the folders this server may write to (its data folder and the configured writable roots).`],
      [
        `${root}-sibling`,
        `The location '${root}-sibling' is outside the folders this server may write to (its data folder and the configured writable roots).`,
      ],
      [
        join(root, 'escape'),
        `The location '${join(root, 'escape')}' leads through a symbolic link to a place outside the folders this server may write to.`,
      ],
    ];
    for (const [location, message] of cases) {
      for (const validate of ['false', 'true']) {
        const { body } = await exportOnce(site, { location, validate });
        expect(body, location).toEqual({ status: 'error', messages: [message], code: 400 });
      }
    }
    expect(readdirSync(outside)).toEqual([]);
    // Inside a configured root (not only the data folder) is fine.
    expect((await exportOnce(site, { location: root })).body).toEqual({ status: 'success', location: join(root, NAME) });
  });

  it('a missing folder without validate is the same 500 error; nothing is created', async () => {
    const site = await adminSite();
    const missing = join(site.config.dataDir, 'missing');
    const { body } = await exportOnce(site, { location: missing });
    expect(body).toEqual({ status: 'error', messages: [NOT_ACCESSIBLE(missing)], code: 500 });
    expect(existsSync(missing)).toBe(false);
    expect(await site.store.lockHolder(SITE_BACKUP_LOCK)).toBeUndefined();
  });

  it('a write failure (disk full) answers code 500 naming the cause, and releases the lock', async () => {
    const site = await adminSite();
    const dir = site.config.dataDir;
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const { res, body } = await exportOnce(site, { location: dir }, { writeArchive: () => Promise.reject(full) });
    expect(res.status).toBe(200);
    expect(body).toEqual({
      status: 'error',
      messages: [`The site export could not be written to '${dir}': the disk is full (ENOSPC).`],
      code: 500,
    });
    const odd = await exportOnce(site, { location: dir }, { writeArchive: () => Promise.reject(new Error('device vanished')) });
    expect(odd.body).toEqual({
      status: 'error',
      messages: [`The site export could not be written to '${dir}': device vanished.`],
      code: 500,
    });
    expect(await site.store.lockHolder(SITE_BACKUP_LOCK)).toBeUndefined();
    expect((await exportOnce(site, { location: dir })).body).toEqual({ status: 'success', location: join(dir, NAME) });
  });

  it('is atomic: the final name appears only complete; a crash before the rename leaves neither file', async () => {
    const site = await adminSite();
    const dir = join(site.config.dataDir, 'atomic');
    mkdirSync(dir);
    let seen: string[] = [];
    let tempSize = 0;
    const { body } = await exportOnce(
      site,
      { location: dir },
      {
        beforeRename: async (temp) => {
          seen = readdirSync(dir);
          tempSize = readFileSync(temp).length;
        },
      },
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatch(/^\.partial-\d+-[0-9a-f-]+\.tmp$/);
    expect(body).toEqual({ status: 'success', location: join(dir, NAME) });
    expect(readdirSync(dir)).toEqual([NAME]); // the temporary file is gone
    expect(readFileSync(join(dir, NAME)).length).toBe(tempSize);

    const crash = await exportOnce(site, { location: dir }, { beforeRename: () => Promise.reject(new Error('power cut')) });
    expect(crash.body).toMatchObject({ status: 'error', code: 500 });
    expect(readdirSync(dir)).toEqual([NAME]);
  });
});

describe('exportSite without location: download (§3.2)', () => {
  it('answers the download URL; the file is served to administrators as an attachment', async () => {
    const site = await adminSite();
    await populate(site);
    const { body } = await exportOnce(site, {});
    expect(body).toEqual({ status: 'success', location: `https://localhost/server/admin/exportSite/download/${NAME}` });
    const onDisk = readFileSync(join(site.config.dataDir, 'site-exports', NAME));
    const dl = downloadHandler(site);
    // Any carrier: header, query, form body.
    const token = await adminToken(site);
    const viaHeader = await dl(siteRequest(`/server/admin/exportSite/download/${NAME}`, { headers: { authorization: `Bearer ${token}` } }));
    expect(viaHeader.status).toBe(200);
    expect(viaHeader.headers.get('content-type')).toBe('application/zip');
    expect(viaHeader.headers.get('content-disposition')).toBe(`attachment; filename="${NAME}"`);
    expect(Buffer.from(await viaHeader.arrayBuffer()).equals(onDisk)).toBe(true);
    const viaQuery = await dl(siteRequest(`/server/admin/exportSite/download/${NAME}?token=${token}`));
    expect(Buffer.from(await viaQuery.arrayBuffer()).equals(onDisk)).toBe(true);
    const viaBody = await dl(siteRequest(`/server/admin/exportSite/download/${NAME}`, { form: { token } }));
    expect(Buffer.from(await viaBody.arrayBuffer()).equals(onDisk)).toBe(true);
    const head = await dl(siteRequest(`/server/admin/exportSite/download/${NAME}?token=${token}`, { method: 'HEAD' }));
    expect(head.headers.get('content-length')).toBe(String(onDisk.length));
    expect(await head.text()).toBe('');
    expect(JSON.parse(entriesOf(onDisk)['manifest.json']!).counts.services).toBe(3);
  });

  it('uses the configured public origin in the URL', async () => {
    const site = await adminSite({ publicOrigin: 'https://gis.example' });
    expect((await exportOnce(site, {})).body).toEqual({
      status: 'success',
      location: `https://gis.example/server/admin/exportSite/download/${NAME}`,
    });
  });

  it('download: no token 499, non-administrator 403, unknown or malformed names 404 (admin shape, JSON)', async () => {
    const site = await adminSite();
    await exportOnce(site, {});
    writeFileSync(join(site.config.dataDir, 'secret.txt'), 'secret');
    const dl = downloadHandler(site);
    const url = `/server/admin/exportSite/download/${NAME}`;
    expect(await jsonOf(await dl(siteRequest(url)))).toEqual({
      status: 'error',
      messages: ["Unauthorized access. Token not found. You can generate a token using the 'generateToken' operation."],
      code: 499,
    });
    const pub = await site.token('pub');
    expect(await jsonOf(await dl(siteRequest(`${url}?token=${pub}`)))).toEqual({
      status: 'error',
      messages: ['You do not have permissions to access this resource or perform this operation.'],
      code: 403,
    });
    const token = await adminToken(site);
    for (const name of [
      '20200101-000000-UTC.agssite',
      '..%2Fsecret.txt',
      '..%2F..%2Fetc%2Fpasswd',
      'secret.txt',
      '%2Fetc%2Fpasswd',
      '20260115-120000-UTC.agssite%00',
      '20261315-120000-UTC.agssite',
      '20260115-120000-UTC-0.agssite',
      '%E0%A4%A',
    ]) {
      const res = await dl(siteRequest(`/server/admin/exportSite/download/${name}?token=${token}`));
      const body = await jsonOf(res);
      expect(body, name).toMatchObject({ status: 'error', code: 404 });
      expect(String((body['messages'] as string[])[0])).toMatch(/^The site export '.*' does not exist or has expired\.$/);
    }
    // PUT is not a way in.
    expect(await jsonOf(await dl(siteRequest(`${url}?token=${token}`, { method: 'PUT' })))).toEqual({
      status: 'error',
      messages: ['Method not supported.'],
      code: 405,
    });
  });

  it('removes exports 24 h after creation, swept on each download and each export (clock injected)', async () => {
    const site = await adminSite();
    const dir = downloadDir(site.config);
    const dl = downloadHandler(site);
    const url = `/server/admin/exportSite/download/${NAME}`;
    await exportOnce(site, {});
    // A temporary file left by a crash a day ago is swept too; foreign files are left alone.
    writeFileSync(join(dir, `.partial-${site.clock.now() - DOWNLOAD_LIFETIME_MS}-0a1b.tmp`), 'half');
    writeFileSync(join(dir, 'README'), 'keep');
    site.clock.advance(DOWNLOAD_LIFETIME_MS - 1);
    const token = await adminToken(site);
    expect((await dl(siteRequest(`${url}?token=${token}`))).headers.get('content-type')).toBe('application/zip');
    expect(readdirSync(dir).sort()).toEqual([NAME, 'README']);
    site.clock.advance(1);
    expect(await jsonOf(await dl(siteRequest(`${url}?token=${token}`)))).toMatchObject({ status: 'error', code: 404 });
    expect(readdirSync(dir)).toEqual(['README']);

    // The sweep on export: an old export disappears when a new one is made.
    await exportOnce(site, {});
    const first = readdirSync(dir).filter((n) => n.endsWith('.agssite'));
    expect(first).toHaveLength(1);
    site.clock.advance(DOWNLOAD_LIFETIME_MS);
    await exportOnce(site, {});
    const second = readdirSync(dir).filter((n) => n.endsWith('.agssite'));
    expect(second).toHaveLength(1);
    expect(second[0]).not.toBe(first[0]);
  });
});

describe('exportSite: the site backup lock (§3.2)', () => {
  it('while an export runs, admin writes and a second export get 409; afterwards both are allowed', async () => {
    const site = await adminSite();
    const archive = join(site.config.dataDir, NAME);
    expect((await exportOnce(site, { location: site.config.dataDir })).body).toEqual({ status: 'success', location: archive });
    const gate = deferred();
    let reached!: () => void;
    const atWrite = new Promise<void>((r) => (reached = r));
    const slow = exportSiteHandler(
      deps(site, {
        beforeWrite: () => {
          reached();
          return gate.promise;
        },
      }),
    );
    const token = await adminToken(site);
    const running = slow(adminPost(EXPORT, {}, token));
    await atWrite;
    expect(await site.store.lockHolder(SITE_BACKUP_LOCK)).toMatch(/^exportSite:/);
    await expect(assertNoSiteBackup(site)).rejects.toMatchObject({ code: 'CONFLICT', details: [BUSY] });
    const second = await exportSiteHandler(site)(adminPost(EXPORT, {}, token));
    expect(await jsonOf(second)).toEqual({ status: 'error', messages: [BUSY], code: 409 });
    const dir = tempDir();
    const s2 = { ...site, config: { ...site.config, writableRoots: [dir] } };
    expect(await jsonOf(await exportSiteHandler(s2)(adminPost(EXPORT, { location: dir }, token)))).toEqual({
      status: 'error',
      messages: [BUSY],
      code: 409,
    });
    expect(readdirSync(dir)).toEqual([]);
    // An import (a configuration write) is refused too.
    const imp = await importSiteHandler(site)(adminPost('/server/admin/importSite', { location: archive }, token));
    expect(await jsonOf(imp)).toEqual({ status: 'error', messages: [BUSY], code: 409 });
    gate.resolve();
    expect(await jsonOf(await running)).toEqual({
      status: 'success',
      location: `https://localhost/server/admin/exportSite/download/${NAME}`,
    });
    await expect(assertNoSiteBackup(site)).resolves.toBeUndefined();
    expect(await jsonOf(await exportSiteHandler(s2)(adminPost(EXPORT, { location: dir }, token)))).toEqual({
      status: 'success',
      location: join(dir, NAME),
    });
  });

  it('validate does not take the lock; a crashed holder frees it after its time to live', async () => {
    const site = await adminSite();
    await site.store.acquireLock(SITE_BACKUP_LOCK, 'exportSite:crashed', EXPORT_LOCK_TTL_MS);
    expect((await exportOnce(site, { validate: 'true' })).body).toEqual({ status: 'success' });
    expect((await exportOnce(site, {})).body).toEqual({ status: 'error', messages: [BUSY], code: 409 });
    site.clock.advance(EXPORT_LOCK_TTL_MS);
    expect((await exportOnce(site, {})).body).toMatchObject({ status: 'success' });
  });

  it('is a lease: 30 s to live, renewed by its holder while the export runs longer than that', async () => {
    expect(EXPORT_LOCK_TTL_MS).toBe(30_000);
    const site = await adminSite();
    const ttl = 200;
    const seen: (string | undefined)[] = [];
    const { body } = await exportOnce(
      site,
      {},
      {
        lockTtlMs: ttl,
        beforeWrite: async () => {
          // Ten times the time to live passes on the store's clock, in steps shorter than it; the holder
          // renews (every ttl/3 of real time) in between, so the lease never lapses.
          for (let i = 0; i < 20; i++) {
            site.clock.advance(ttl / 2);
            await new Promise((r) => setTimeout(r, ttl / 2));
            seen.push(await site.store.lockHolder(SITE_BACKUP_LOCK));
          }
        },
      },
    );
    expect(body).toMatchObject({ status: 'success' });
    expect(seen.every((h) => h !== undefined && h === seen[0])).toBe(true);
    expect(await site.store.lockHolder(SITE_BACKUP_LOCK)).toBeUndefined();
  });

  it('a lease that lapsed and was taken by another holder: the export answers 409 and leaves no archive', async () => {
    const site = await adminSite();
    const dir = tempDir();
    const s2 = { ...site, config: { ...site.config, writableRoots: [dir] } };
    const ttl = 150;
    const res = await exportSiteHandler(
      deps(s2, {
        lockTtlMs: ttl,
        beforeWrite: async () => {
          // The process stalls past its lease: another server takes it, the next renewal finds it gone.
          site.clock.advance(ttl + 1);
          expect(await site.store.acquireLock(SITE_BACKUP_LOCK, 'exportSite:other-server', 60_000)).toBe(true);
          await new Promise((r) => setTimeout(r, ttl));
        },
      }),
    )(adminPost(EXPORT, { location: dir }, await adminToken(site)));
    expect(await jsonOf(res)).toEqual({ status: 'error', messages: [BUSY], code: 409 });
    expect(readdirSync(dir)).toEqual([]);
    // The other holder's lease is left alone.
    expect(await site.store.lockHolder(SITE_BACKUP_LOCK)).toBe('exportSite:other-server');
  });

  it("start-up clears the lease its own killed run left; another machine's, a live process's or an unknown holder's waits", async () => {
    const site = await adminSite();
    const mine = siteBackupHolder();
    expect(mine).toMatch(new RegExp(`^exportSite:host=[^;]+;boot=[^;]*;pid=${process.pid};run=[0-9a-f-]{36}$`));
    const boot = /;boot=([^;]*);/.exec(mine)![1]!;
    const host = /host=([^;]+);/.exec(mine)![1]!;
    // A pid that no process has: beyond Linux's pid_max.
    const deadPid = 4_194_304 + 7;
    const cases: [string, string, boolean][] = [
      ['this process id (a restarted container)', mine, true],
      ['a dead process of this machine and boot', `exportSite:host=${host};boot=${boot};pid=${deadPid};run=${crypto.randomUUID()}`, true],
      [
        'a live process of this machine (the test runner)',
        `exportSite:host=${host};boot=${boot};pid=${process.ppid};run=${crypto.randomUUID()}`,
        false,
      ],
      ['another machine', `exportSite:host=elsewhere;boot=${boot};pid=${deadPid};run=${crypto.randomUUID()}`, false],
      ['an earlier boot', `exportSite:host=${host};boot=0000;pid=${deadPid};run=${crypto.randomUUID()}`, false],
      ['a holder id of an older version', 'exportSite:crashed', false],
    ];
    for (const [what, holder, cleared] of cases) {
      expect(await site.store.acquireLock(SITE_BACKUP_LOCK, holder, EXPORT_LOCK_TTL_MS), what).toBe(true);
      const released = await clearOwnStaleSiteBackupLock(site);
      if (boot === '' && cleared) {
        // No boot id on this platform: nothing can be proven dead, the lease waits.
        expect(released, what).toBeUndefined();
      } else {
        expect(released, what).toBe(cleared ? holder : undefined);
        expect(await site.store.lockHolder(SITE_BACKUP_LOCK), what).toBe(cleared ? undefined : holder);
      }
      await site.store.releaseLock(SITE_BACKUP_LOCK, holder);
    }
    expect(await clearOwnStaleSiteBackupLock(site)).toBeUndefined();
  });

  it("the temporary file of a killed export is removed by the next export, in the server's folder and in a location", async () => {
    const site = await adminSite();
    const dir = tempDir();
    const s2 = { ...site, config: { ...site.config, writableRoots: [dir] } };
    const downloads = downloadDir(site.config);
    mkdirSync(downloads, { recursive: true });
    const left = `.partial-${site.clock.now()}-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0.tmp`;
    writeFileSync(join(downloads, left), 'half an archive');
    writeFileSync(join(dir, left), 'half an archive');
    writeFileSync(join(dir, 'notes.tmp'), 'an administrator file');
    const token = await adminToken(site);
    expect(await jsonOf(await exportSiteHandler(s2)(adminPost(EXPORT, {}, token)))).toMatchObject({ status: 'success' });
    expect(readdirSync(downloads)).toEqual([NAME]);
    expect(await jsonOf(await exportSiteHandler(s2)(adminPost(EXPORT, { location: dir }, token)))).toMatchObject({ status: 'success' });
    expect(readdirSync(dir).sort()).toEqual([NAME, 'notes.tmp']);
  });
});

describe('exportSite: contents (seed §4 includes/excludes)', () => {
  it('holds the manifest and every included kind; users keep their hashes, webhooks their keys', async () => {
    const site = await adminSite();
    await populate(site);
    const dir = site.config.dataDir;
    const res = await exportSiteHandler(deps(site, {}, { https: 6443, http: 6080 }))(
      adminPost(EXPORT, { location: dir }, await adminToken(site)),
    );
    expect(await jsonOf(res)).toEqual({ status: 'success', location: join(dir, NAME) });
    const e = entriesOf(readFileSync(join(dir, NAME)));
    expect(Object.keys(e).sort()).toEqual(
      [
        'dataStoreItems.json',
        'federatedServers.json',
        'federations.json',
        'identityProviders.json',
        'logSettings.json',
        'machines.json',
        'manifest.json',
        'oauthApps.json',
        'roles.json',
        'serverObjectExtensions.json',
        'serverObjectInterceptors.json',
        'services.json',
        'users.json',
        'webhooks.json',
      ].sort(),
    );
    const manifest = JSON.parse(e['manifest.json']!);
    expect(manifest).toMatchObject({
      formatVersion: 1,
      product: 'rasterflow',
      productVersion: JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version,
      created: '2026-01-15T12:00:00.000Z',
      organization: 'org1',
      counts: {
        services: 3,
        webhooks: 2,
        serverObjectExtensions: 0,
        serverObjectInterceptors: 0,
        dataStoreItems: 0,
        users: 4, // ops, pub, alice, carol: never the primary administrator
        roles: 2, // editors, gp
        machines: 1,
        federations: 1,
        identityProviders: 1,
        federatedServers: 1,
        oauthApps: 2,
      },
    });
    expect(manifest.notes.join(' ')).toContain('no server object extensions, server object interceptors or registered data store items');
    expect(manifest.excluded).toContain('the primary site administrator name and password');
    const users = JSON.parse(e['users.json']!);
    expect(users.map((u: { username: string }) => u.username).sort()).toEqual(['alice', 'carol', 'ops', 'pub']);
    const alice = users.find((u: { username: string }) => u.username === 'alice');
    expect(await verifyPassword('alice-secret', alice.passwordHash)).toBe(true);
    expect(alice).toMatchObject({ role: 'publisher', roles: ['editors'], email: 'alice@example.com' });
    expect(JSON.parse(e['webhooks.json']!).find((h: { id: string }) => h.id === 'wh1').signatureKey).toBe('whsec-parcels-1');
    expect(
      JSON.parse(e['services.json']!)
        .map((s: { serviceName: string }) => s.serviceName)
        .sort(),
    ).toEqual(['Elevation', 'Parcels', 'Tools']);
    expect(JSON.parse(e['machines.json']!)).toEqual([
      { machineName: (await import('node:os')).hostname(), platform: process.platform, ports: { https: 6443, http: 6080 } },
    ]);
    expect(JSON.parse(e['logSettings.json']!)).toEqual({ logLevel: 'WARNING', maxLogFileAge: 90 });
    expect(JSON.parse(e['serverObjectExtensions.json']!)).toEqual([]);
    expect(JSON.parse(e['oauthApps.json']!).find((a: { clientId: string }) => a.clientId === 'app-primary').owner).toBe(
      '<primary site administrator>',
    );
    // Excluded: jobs (statuses and messages), signing keys, the organization's other settings.
    const all = Object.values(e).join('\n');
    expect(all).not.toContain('job-secret-status');
    expect(all).not.toContain('job message 42');
    expect(site.keys.data().keys.length).toBeGreaterThan(0);
    for (const k of site.keys.data().keys) expect(all).not.toContain(k.secret);
    expect(all).not.toContain('signingKeys');
  });

  it('never carries the primary site administrator: name, password or hash, in the raw bytes or any entry', async () => {
    const site = await adminSite();
    await populate(site);
    const primary = await site.store.getUser(PRIMARY);
    expect(primary?.primary).toBe(true);
    const hash = primary!.passwordHash;
    const hashParts = hash.split('$').slice(4); // salt and key, the distinctive parts
    const dir = site.config.dataDir;
    await exportOnce(site, { location: dir });
    const raw = readFileSync(join(dir, NAME));
    const rawText = raw.toString('latin1');
    const needles = [PRIMARY, PRIMARY_PASSWORD, hash, ...hashParts];
    for (const n of needles) expect(rawText.includes(n), `raw bytes contain ${n.slice(0, 8)}…`).toBe(false);
    for (const n of needles) expect(raw.includes(Buffer.from(n, 'utf16le'))).toBe(false);
    const entries = entriesOf(raw);
    expect(Object.keys(entries).length).toBeGreaterThan(10);
    for (const [name, text] of Object.entries(entries)) {
      for (const n of needles) expect(text.includes(n), `${name} contains ${n.slice(0, 8)}…`).toBe(false);
    }
    // The download route serves the same bytes: same check through the URL path.
    const { body } = await exportOnce(site, {});
    const name = String(body['location']).split('/').pop()!;
    const dl = await downloadHandler(site)(siteRequest(`/server/admin/exportSite/download/${name}?token=${await adminToken(site)}`));
    const bytes = Buffer.from(await dl.arrayBuffer());
    for (const text of [bytes.toString('latin1'), ...Object.values(entriesOf(bytes))])
      for (const n of needles) expect(text.includes(n)).toBe(false);
  });
});

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adminSite, populate, tempDir } from '../../../test/site-archive-fixtures.js';
import { EngineError } from '../../core/errors.js';
import { adminError } from '../rest.js';
import {
  archiveFileName,
  archiveNameTime,
  checkLocation,
  collectSite,
  decodeArchive,
  encodeArchive,
  isWritableDir,
  joinLocation,
  notAccessible,
  rasterflowVersion,
  separatorOf,
  sweepDownloads,
  writeArchiveFile,
  writeFailure,
} from './site-archive.js';

describe('archive names (§3.2)', () => {
  it('is <yyyyMMdd>-<HHmmss>-UTC.agssite in UTC, with -n suffixes, and parses back', () => {
    const t = Date.UTC(2025, 4, 14, 9, 30, 12);
    expect(archiveFileName(t)).toBe('20250514-093012-UTC.agssite');
    expect(archiveFileName(t + 999)).toBe('20250514-093012-UTC.agssite');
    expect(archiveFileName(t, 2)).toBe('20250514-093012-UTC-2.agssite');
    expect(archiveNameTime('20250514-093012-UTC.agssite')).toBe(t);
    expect(archiveNameTime('20250514-093012-UTC-12.agssite')).toBe(t);
    for (const bad of [
      '20250514-093012-UTC.zip',
      '20250532-093012-UTC.agssite',
      '20250514-093012-UTC-0.agssite',
      '../20250514-093012-UTC.agssite',
      'x',
    ]) {
      expect(archiveNameTime(bad), bad).toBeUndefined();
    }
  });

  it("joins with the location's own separator", () => {
    const name = '20250514-093012-UTC.agssite';
    expect(joinLocation('\\\\fileserver\\backups', name)).toBe('\\\\fileserver\\backups\\20250514-093012-UTC.agssite');
    expect(joinLocation('\\\\fileserver\\backups\\', name)).toBe('\\\\fileserver\\backups\\20250514-093012-UTC.agssite');
    expect(joinLocation('C:\\backups', name)).toBe('C:\\backups\\20250514-093012-UTC.agssite');
    expect(joinLocation('C:\\', name)).toBe('C:\\20250514-093012-UTC.agssite');
    expect(joinLocation('/mnt/backups', name)).toBe('/mnt/backups/20250514-093012-UTC.agssite');
    expect(joinLocation('/mnt/backups//', name)).toBe('/mnt/backups/20250514-093012-UTC.agssite');
    expect(joinLocation('/', name)).toBe('/20250514-093012-UTC.agssite');
    expect(separatorOf('\\\\server\\share')).toBe('\\');
    expect(separatorOf('/a/b')).toBe('/');
  });
});

describe('locations', () => {
  it('checkLocation allows the data folder and the writable roots, nothing else', async () => {
    const data = tempDir();
    const root = tempDir();
    const config = { dataDir: data, writableRoots: [root] };
    expect(await checkLocation(data, config)).toBe(data);
    expect(await checkLocation(join(root, 'not-yet', 'deeper'), config)).toBe(join(root, 'not-yet', 'deeper'));
    await expect(checkLocation('/tmp', config)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', path: 'location' });
    await expect(checkLocation(`${root}/x\0y`, config)).rejects.toMatchObject({
      details: [`The location '${root}/xy' contains a NUL character.`],
    });
  });

  it('isWritableDir needs an existing folder where a file can be created', async () => {
    const dir = tempDir();
    expect(await isWritableDir(dir)).toBe(true);
    expect(readdirSync(dir)).toEqual([]); // the probe is removed
    writeFileSync(join(dir, 'f'), '');
    expect(await isWritableDir(join(dir, 'f'))).toBe(false);
    expect(await isWritableDir(join(dir, 'missing'))).toBe(false);
  });

  it('the accessibility and write-failure sentences reach the admin body (code 500); other server faults stay hidden', () => {
    expect(adminError(notAccessible('/mnt/backups'))).toEqual({
      status: 'error',
      messages: ["The location '/mnt/backups' is not accessible. It must be accessible and writable by the server's service account."],
      code: 500,
    });
    const rofs = Object.assign(new Error('EROFS'), { code: 'EROFS' });
    expect(adminError(writeFailure('/b', rofs)).messages).toEqual([
      "The site export could not be written to '/b': the file system is read-only (EROFS).",
    ]);
    expect(adminError(new EngineError('INTERNAL', 'secret /etc/x', { details: ['secret /etc/x'] })).messages).toEqual([
      'Error performing the operation.',
    ]);
  });
});

describe('writing and sweeping', () => {
  it('writeArchiveFile never replaces an existing file and leaves no temporary file', async () => {
    const dir = tempDir();
    const t = Date.UTC(2026, 0, 1);
    writeFileSync(join(dir, archiveFileName(t)), 'somebody else');
    expect(await writeArchiveFile(dir, t, new Uint8Array([1, 2, 3]))).toBe(archiveFileName(t, 1));
    expect(readFileSync(join(dir, archiveFileName(t)), 'utf8')).toBe('somebody else');
    expect([...readFileSync(join(dir, archiveFileName(t, 1)))]).toEqual([1, 2, 3]);
    expect(readdirSync(dir).sort()).toEqual([archiveFileName(t, 1), archiveFileName(t)].sort());
    await expect(writeArchiveFile(join(dir, 'missing'), t, new Uint8Array(1))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('sweepDownloads removes archives and leftovers 24 h old, by the time in their names', async () => {
    const dir = tempDir();
    const t = Date.UTC(2026, 0, 1);
    mkdirSync(join(dir, 'sub'));
    for (const n of [archiveFileName(t), archiveFileName(t, 3), archiveFileName(t + 1000), `.partial-${t}-ab12.tmp`, 'other.agssite'])
      writeFileSync(join(dir, n), '');
    expect((await sweepDownloads(dir, t + 86_400_000)).sort()).toEqual(
      [archiveFileName(t), archiveFileName(t, 3), `.partial-${t}-ab12.tmp`].sort(),
    );
    expect(readdirSync(dir).sort()).toEqual([archiveFileName(t + 1000), 'other.agssite', 'sub'].sort());
    expect(await sweepDownloads(join(dir, 'none'), t)).toEqual([]);
    expect(existsSync(join(dir, 'sub'))).toBe(true);
  });
});

describe('encode / decode', () => {
  it('decodes what it encodes', async () => {
    const site = await adminSite();
    await populate(site);
    const at = site.clock.now();
    const archive = await collectSite(site, at);
    const back = decodeArchive(encodeArchive(archive, at));
    expect(back).toEqual(archive);
    expect(back.manifest.productVersion).toBe(rasterflowVersion());
    expect(rasterflowVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

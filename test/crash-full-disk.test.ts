/**
 * A full disk during an export (issue 20 item 4). A 2 MiB tmpfs (the tests run as root; skipped with
 * a visible warning where mount is refused) receives a chip export that needs about 8 MiB: the export
 * fails with IO_ERROR naming the file and ENOSPC, leaves no temporary file, and its journal lists only
 * chips whose files are complete; once the file system has room a resume ends byte-identical to an
 * uninterrupted export. A site export into a full location fails with the cause, releases the lock
 * and leaves no archive.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportSiteHandler } from '../src/adapters/admin/export-site.js';
import { createGpService, GP_ROOT } from '../src/adapters/gp/training-data-task.js';
import { assertNoSiteBackup, SITE_BACKUP_LOCK } from '../src/adapters/site.js';
import { EngineError } from '../src/core/errors.js';
import { exportTrainingData } from '../src/chipper/export.js';
import { CRASH_CHIP_PARAMS, expectJournalTrustworthy, expectSameTree, JOURNAL, journalChips, temporaries, tree } from './crash-helpers.js';
import { adminPost, adminSite, adminToken } from './site-archive-fixtures.js';
import { spawnChild } from './serve-helpers.js';
import { jsonOf, siteRequest, testSite } from './site.js';

const base = mkdtempSync(join(tmpdir(), 'rf-full-disk-'));
const disk = join(base, 'disk');
mkdirSync(disk);
let mounted = false;

/** Size the tmpfs at `size` (mount -o remount keeps its files). */
const resize = (size: string): void => void execFileSync('mount', ['-o', `remount,size=${size}`, disk]);

beforeAll(() => {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', disk], { stdio: 'pipe' });
    mounted = true;
  } catch (e) {
    console.warn(`SKIPPED: the full-disk tests need to mount a tmpfs (run as root): ${String((e as Error).message).split('\n')[0]}`);
  }
});
afterAll(() => {
  if (mounted) execFileSync('umount', [disk]);
  rmSync(base, { recursive: true, force: true });
});

const refDir = join(base, 'reference');
let referenceMade: Promise<unknown> | undefined;
/** The uninterrupted export (on the ordinary disk), made once. */
async function reference(): Promise<Map<string, Buffer>> {
  referenceMade ??= exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: refDir });
  await referenceMade;
  return tree(refDir);
}

/** Empty the file system (what an earlier test left). */
const clearDisk = (): void => {
  for (const n of readdirSync(disk)) rmSync(join(disk, n), { recursive: true, force: true });
};

/** Fill the file system (a file of zeros until ENOSPC); answers the filler's path. */
function fill(name: string): string {
  const p = join(disk, name);
  try {
    writeFileSync(p, Buffer.alloc(64 * 1024 * 1024));
  } catch (e) {
    expect((e as NodeJS.ErrnoException).code).toBe('ENOSPC');
  }
  return p;
}

describe('a full disk during a chip export', { timeout: 120_000 }, () => {
  it('fails with IO_ERROR naming the file and ENOSPC, trusts no incomplete chip, and resumes to identical bytes once there is room', async (ctx) => {
    if (!mounted) ctx.skip();
    clearDisk();
    resize('2m');
    const ref = await reference();

    const out = join(disk, 'chips');
    const failures: string[] = [];
    let err: unknown;
    try {
      await exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: out });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(EngineError);
    const e = err as EngineError;
    expect(e.code).toBe('IO_ERROR');
    expect(e.path).toBe('outputLocation');
    expect(e.message).toMatch(new RegExp(`^cannot write ${out.replace(/[/.]/g, '\\$&')}/\\S+: the disk is full \\(ENOSPC\\)$`));
    failures.push(e.message);
    // The chips written are kept (a resume continues them); none is under a temporary name.
    expect(existsSync(join(out, JOURNAL))).toBe(true);
    expect(temporaries(out)).toEqual([]);
    const checked = expectJournalTrustworthy(out, ref);
    const journalled = journalChips(out).length;
    expect(journalled).toBeGreaterThan(0);
    expect(journalled).toBeLessThan(484);

    // A resume while the disk is still full fails the same way and trusts nothing new.
    await expect(exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: out, resume: true })).rejects.toMatchObject({
      code: 'IO_ERROR',
      message: expect.stringContaining('(ENOSPC)') as unknown,
    });
    expect(temporaries(out)).toEqual([]);
    const checkedAgain = expectJournalTrustworthy(out, ref);

    // Room again: the resume completes and equals the uninterrupted export.
    resize('32m');
    const s = await exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: out, resume: true });
    expect(s.chips).toBe(484);
    expect(s.resumedFrom).toBeGreaterThanOrEqual(journalled);
    expect(existsSync(join(out, JOURNAL))).toBe(false);
    expect(temporaries(out)).toEqual([]);
    const bytes = expectSameTree(out, refDir);
    console.log(
      `full disk, chip export: failed at chip ${journalled} of 484 with "${failures[0]}"; ` +
        `${checked + checkedAgain} journalled chip files checked complete; resumed from ${s.resumedFrom}; ${ref.size} files / ${bytes} bytes equal`,
    );
    rmSync(out, { recursive: true, force: true });
  });

  it('`rasterflow chip` into a full disk: exit status 1 with the IO_ERROR line, no stack trace, no temporary file', async (ctx) => {
    if (!mounted) ctx.skip();
    clearDisk();
    resize('2m');
    const out = join(disk, 'cli');
    const c = spawnChild('src/cli/main.ts', ['chip', JSON.stringify({ ...CRASH_CHIP_PARAMS, outputLocation: out })], process.env, 60_000);
    try {
      expect(await c.exited).toBe(1);
      const lines = c
        .stderr()
        .split('\n')
        .filter((l) => l.startsWith('error '));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^error IO_ERROR at outputLocation: cannot write \S+: the disk is full \(ENOSPC\)$/);
      expect(c.stderr()).not.toMatch(/\n\s+at /);
      expect(temporaries(out)).toEqual([]);
      expect(journalChips(out).length).toBeGreaterThan(0);
    } finally {
      if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    }
  });

  it('a journal line cut short by the full disk: the resume cuts the journal back to its complete lines, so a second stop skips no chip', async (ctx) => {
    if (!mounted) ctx.skip();
    clearDisk();
    resize('32m');
    const ref = await reference();
    const out = join(disk, 'cut');
    // An export stopped by the full disk.
    resize('2m');
    await expect(exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: out })).rejects.toMatchObject({ code: 'IO_ERROR' });
    // What a short write at the full disk leaves: the journal's last line cut, without its newline.
    const path = join(out, JOURNAL);
    const lines = readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
    expect(lines.length).toBeGreaterThan(3);
    writeFileSync(path, `${lines.slice(0, -1).join('\n')}\n${lines[lines.length - 1]!.slice(0, 40)}`);
    const trusted = journalChips(out).length;
    expect(trusted).toBe(lines.length - 2);
    // A little room: the resume goes on, and the disk fills again part way.
    resize('3m');
    await expect(exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: out, resume: true })).rejects.toMatchObject({
      code: 'IO_ERROR',
    });
    // Its chips were appended on lines of their own: the journal runs without a gap.
    const indexes = journalChips(out).map((c) => c.index);
    expect(indexes.length).toBeGreaterThan(trusted + 1);
    expect(indexes).toEqual(indexes.map((_, k) => k));
    expectJournalTrustworthy(out, ref);
    resize('32m');
    const s = await exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: out, resume: true });
    expect(s.chips).toBe(484);
    expectSameTree(out, refDir);
    rmSync(out, { recursive: true, force: true });
  });
});

describe('a full disk during a geoprocessing job', { timeout: 120_000 }, () => {
  it('the job ends geoJobFailed with the cause; resubmitted with resume once there is room, it succeeds with identical bytes', async (ctx) => {
    if (!mounted) ctx.skip();
    clearDisk();
    resize('32m');
    await reference();
    resize('2m');
    const site = await testSite({ writableRoots: [disk] });
    await site.addUser('root', 'administrator');
    const token = await site.token('root');
    const gp = createGpService(site);
    try {
      const task = `${GP_ROOT}/ExportTrainingDataforDeepLearning`;
      const call = async (path: string, form?: Record<string, string>) =>
        jsonOf<Record<string, unknown>>(await gp.routes()[0]!.handler(siteRequest(path, form ? { form } : {})));
      const out = join(disk, 'job');
      const form = (extra: Record<string, string> = {}) => ({
        inputRaster: CRASH_CHIP_PARAMS.inputRaster,
        inputClassData: CRASH_CHIP_PARAMS.inputClassData,
        tileSize: JSON.stringify(CRASH_CHIP_PARAMS.tileSize),
        strideSize: JSON.stringify(CRASH_CHIP_PARAMS.strideSize),
        metadataFormat: CRASH_CHIP_PARAMS.metadataFormat,
        context: JSON.stringify(CRASH_CHIP_PARAMS.context),
        outputLocation: out,
        f: 'json',
        token,
        ...extra,
      });
      const run = async (extra: Record<string, string> = {}) => {
        const { jobId } = (await call(`${task}/submitJob`, form(extra))) as { jobId: string };
        await gp.runner.settled(jobId);
        return call(`${task}/jobs/${jobId}?f=json&token=${token}`);
      };
      const failed = await run();
      expect(failed['jobStatus']).toBe('geoJobFailed');
      const messages = (failed['messages'] as { type: string; description: string }[]).filter((m) => m.type === 'geoJobMessageTypeError');
      expect(messages.map((m) => m.description)).toEqual([
        expect.stringMatching(/^outputLocation: cannot write \S+: the disk is full \(ENOSPC\)$/) as unknown,
        'Failed.',
      ]);
      expect(temporaries(out)).toEqual([]);
      expectJournalTrustworthy(out, tree(refDir));
      const journalled = journalChips(out).length;
      resize('32m');
      const done = await run({ resume: 'true' });
      expect(done['jobStatus']).toBe('geoJobSucceeded');
      const bytes = expectSameTree(out, refDir);
      console.log(
        `full disk, GP job: failed after ${journalled} chips with "${messages[0]!.description}"; resubmitted with resume: ${bytes} bytes equal`,
      );
    } finally {
      await gp.close();
      await site.store.close();
    }
  });
});

describe('a full disk during exportSite', () => {
  it('answers the cause, releases the lock, and leaves no archive or temporary file in the location', async (ctx) => {
    if (!mounted) ctx.skip();
    clearDisk();
    resize('2m');
    const location = join(disk, 'site-backups');
    mkdirSync(location, { recursive: true });
    const filler = fill('site-filler');
    const site = await adminSite({ writableRoots: [disk] });
    const res = await exportSiteHandler(site)(adminPost('/server/admin/exportSite', { location }, await adminToken(site)));
    const msg = `The site export could not be written to '${location}': the disk is full (ENOSPC).`;
    expect(await jsonOf(res)).toEqual({ status: 'error', messages: [msg], code: 500 });
    expect(readdirSync(location)).toEqual([]);
    expect(await site.store.lockHolder(SITE_BACKUP_LOCK)).toBeUndefined();
    await expect(assertNoSiteBackup(site)).resolves.toBeUndefined();
    rmSync(filler);
    const ok = await exportSiteHandler(site)(adminPost('/server/admin/exportSite', { location }, await adminToken(site)));
    expect(await jsonOf(ok)).toMatchObject({ status: 'success' });
    expect(readdirSync(location).filter((n) => n.endsWith('.agssite'))).toHaveLength(1);
  });
});

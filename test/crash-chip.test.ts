/**
 * kill -9 during a chip export (issue 20 item 4): `rasterflow chip` runs in a child process on the
 * Landsat 7 sample with its labels and is SIGKILLed at several points (after its first chips, part
 * way, and as soon as a file is caught under its temporary name, i.e. mid-chip), then resumed with
 * `"resume": true`. After every kill the journal lists only chips whose files are all in place with
 * their final bytes; the last resume ends with a folder byte-identical (names and bytes of every file)
 * to an uninterrupted export with the same parameters, and no temporary file or journal remains.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { exportTrainingData } from '../src/chipper/export.js';
import { GP_ROOT } from '../src/adapters/gp/training-data-task.js';
import {
  CRASH_CHIP_PARAMS,
  expectJournalTrustworthy,
  expectSameTree,
  integrity,
  JOURNAL,
  journalChips,
  postForm,
  REFERER,
  siteAdminToken,
  startServe,
  temporaries,
  tree,
  type Running,
} from './crash-helpers.js';
import { httpCall, spawnChild, type Child } from './serve-helpers.js';

const children: Child[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function chip(params: Record<string, unknown>): Child {
  const c = spawnChild('src/cli/main.ts', ['chip', JSON.stringify(params)], process.env, 60_000);
  children.push(c);
  return c;
}

const countFiles = (dir: string, re: RegExp): number => {
  try {
    return readdirSync(dir).filter((n) => re.test(n)).length;
  } catch {
    return 0;
  }
};

/**
 * Kill the child once `when()` holds (polled as fast as the event loop allows); answers false when the
 * child finished first.
 */
async function killWhen(c: Child, when: () => boolean): Promise<boolean> {
  for (;;) {
    if (c.proc.exitCode !== null || c.proc.signalCode !== null) return false;
    if (when()) {
      c.proc.kill('SIGKILL');
      await c.exited;
      return true;
    }
    await new Promise((r) => setImmediate(r));
  }
}

const hasTemporary = (out: string): boolean => temporaries(out).length > 0;

describe('kill -9 during a chip export, then resume', { timeout: 120_000 }, () => {
  it('every kill leaves a journal that lists only complete chips; the resumed folder equals an uninterrupted export byte for byte', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rf-crash-chip-'));
    dirs.push(dir);
    const refDir = join(dir, 'reference');
    const out = join(dir, 'killed');
    // The uninterrupted export, in this process (the CLI writes the same bytes: training-data-task.test.ts).
    await exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: refDir });
    const reference = tree(refDir);
    const total = countFiles(join(refDir, 'images'), /\.tif$/);
    expect(total).toBe(484);

    const images = join(out, 'images');
    // Kill points: the first chips, part way, and mid-chip (a file caught under its temporary name).
    const points: [string, () => boolean][] = [
      ['after the first chips', () => countFiles(images, /\.tif$/) >= 3],
      ['mid-chip (a temporary file seen)', () => countFiles(images, /\.tif$/) >= 100 && hasTemporary(out)],
      ['part way', () => countFiles(images, /\.tif$/) >= 300],
    ];
    const report: string[] = [];
    let kills = 0;
    let journalFilesChecked = 0;
    let temporariesLeft = 0;
    let chipsBeyondJournal = 0;
    for (const [what, when] of points) {
      const c = chip({ ...CRASH_CHIP_PARAMS, outputLocation: out, resume: true });
      const killed = await killWhen(c, when);
      expect(killed, `the export was killed ${what} (it finished first)`).toBe(true);
      kills++;
      // What the kill left: the journal's chips are complete; temporaries and unrecorded chips are not trusted.
      journalFilesChecked += expectJournalTrustworthy(out, reference);
      const journalled = journalChips(out).length;
      const onDisk = countFiles(images, /\.tif$/);
      const temps = temporaries(out).length;
      temporariesLeft += temps;
      chipsBeyondJournal += Math.max(0, onDisk - journalled);
      report.push(`${what}: ${journalled} chips journalled, ${onDisk} images on disk, ${temps} temporary file(s)`);
    }
    const last = chip({ ...CRASH_CHIP_PARAMS, outputLocation: out, resume: true });
    expect(await last.exited, last.stderr()).toBe(0);
    expect(last.stderr()).toContain('wrote 484 chips');
    expect(existsSync(join(out, JOURNAL))).toBe(false);
    expect(hasTemporary(out)).toBe(false);
    const bytes = expectSameTree(out, refDir);
    console.log(
      `chip export kill -9: ${kills} kills survived, each resumed; ${journalFilesChecked} journalled chip files checked complete after the kills; ` +
        `${temporariesLeft} temporary file(s) and ${chipsBeyondJournal} unjournalled chip image(s) left by the kills, all redone; ` +
        `${reference.size} files / ${bytes} bytes compared equal to the uninterrupted export\n  ${report.join('\n  ')}`,
    );
  });

  it('a training-data job killed with its server is recorded failed at restart; resubmitted with resume it ends with identical bytes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rf-crash-job-'));
    dirs.push(dir);
    const refDir = join(dir, 'reference');
    await exportTrainingData({ ...CRASH_CHIP_PARAMS, outputLocation: refDir });
    const reference = tree(refDir);
    const dataDir = join(dir, 'site');
    const task = `${GP_ROOT}/ExportTrainingDataforDeepLearning`;
    const form = (token: string, extra: Record<string, string> = {}) => ({
      inputRaster: CRASH_CHIP_PARAMS.inputRaster,
      inputClassData: CRASH_CHIP_PARAMS.inputClassData,
      tileSize: JSON.stringify(CRASH_CHIP_PARAMS.tileSize),
      strideSize: JSON.stringify(CRASH_CHIP_PARAMS.strideSize),
      metadataFormat: CRASH_CHIP_PARAMS.metadataFormat,
      context: JSON.stringify(CRASH_CHIP_PARAMS.context),
      outputLocation: 'crash-job',
      token,
      ...extra,
    });
    const jobOf = async (s: Running, token: string, jobId: string) =>
      JSON.parse(
        (
          await httpCall(`${s.url}${task}/jobs/${jobId}?f=json&returnMessages=true&token=${token}`, {
            ca: s.ca,
            headers: { referer: REFERER },
          })
        ).body,
      ) as { jobStatus: string; messages?: { type: string; description: string }[] };

    const first = await startServe(dataDir, children);
    const token = await siteAdminToken(dataDir);
    const submitted = JSON.parse((await postForm(first, `${task}/submitJob`, form(token))).body) as { jobId: string };
    expect(submitted.jobId).toMatch(/\S/);
    const out = join(dataDir, 'jobs', 'crash-job');
    const killed = await killWhen(first.child, () => countFiles(join(out, 'images'), /\.tif$/) >= 100);
    expect(killed, 'the server was killed while its job ran').toBe(true);
    expectJournalTrustworthy(out, reference);
    const journalled = journalChips(out).length;
    expect(integrity(dataDir)).toBe('ok');

    const second = await startServe(dataDir, children);
    const old = await jobOf(second, token, submitted.jobId);
    expect(old.jobStatus).toBe('geoJobFailed');
    expect(old.messages?.map((m) => m.description)).toContain(
      'The server restarted while the job was running; the job was stopped. Submit it again.',
    );
    const again = JSON.parse((await postForm(second, `${task}/submitJob`, form(token, { resume: 'true' }))).body) as { jobId: string };
    let status = '';
    for (let i = 0; i < 600 && !['geoJobSucceeded', 'geoJobFailed', 'geoJobCancelled'].includes(status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await jobOf(second, token, again.jobId)).jobStatus;
    }
    expect(status, JSON.stringify(await jobOf(second, token, again.jobId))).toBe('geoJobSucceeded');
    expect(temporaries(out)).toEqual([]);
    expect(existsSync(join(out, JOURNAL))).toBe(false);
    const bytes = expectSameTree(out, refDir);
    second.child.proc.kill('SIGTERM');
    expect(await second.child.exited).toBe(0);
    expect(integrity(dataDir)).toBe('ok');
    console.log(
      `GP job kill -9: 1 kill survived after ${journalled} journalled chips; the job recorded geoJobFailed at restart; ` +
        `resubmitted with resume: ${reference.size} files / ${bytes} bytes equal`,
    );
  });
});

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.js';
import { ExportFolder, writeAtomicOffThread, writeAtomicSync } from './files.js';

const dir = mkdtempSync(join(tmpdir(), 'rf-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeAtomicSync', () => {
  it('writes every byte under the final name, makes the folder, and leaves no temporary file', () => {
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) & 255);
    const path = join(dir, 'a', 'b', 'chip.tif');
    expect(writeAtomicSync(path, bytes)).toBe(bytes.length);
    expect(readFileSync(path).equals(Buffer.from(bytes))).toBe(true);
    expect(writeAtomicSync(path, 'é\n')).toBe(3); // bytes, not characters; an existing file is replaced
    expect(readFileSync(path, 'utf8')).toBe('é\n');
    expect(readdirSync(join(dir, 'a', 'b'))).toEqual(['chip.tif']);
  });

  it('a failed write is IO_ERROR naming the file and its cause, at outputLocation, with no temporary file left', () => {
    const target = join(dir, 'taken');
    mkdirSync(join(target, 'inside'), { recursive: true }); // a non-empty folder cannot be replaced by a file
    let error: unknown;
    try {
      writeAtomicSync(target, 'x');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EngineError);
    expect((error as EngineError).code).toBe('IO_ERROR');
    expect((error as EngineError).path).toBe('outputLocation');
    expect((error as EngineError).message).toContain(`cannot write ${target}`);
    expect(readdirSync(dir).filter((n) => n.includes('.part-'))).toEqual([]);
  });

  it('a folder that cannot be made is IO_ERROR naming the folder', () => {
    writeFileSync(join(dir, 'plain'), 'a file, not a folder');
    expect(() => writeAtomicSync(join(dir, 'plain', 'sub', 'x.txt'), 'x')).toThrow(/cannot write .*plain\/sub/);
  });

  it("ExportFolder.writeSync and ChipFiles.file write below the export's folder and count the bytes", async () => {
    const folder = new ExportFolder(join(dir, 'export'));
    expect(folder.writeSync('images/1.tfw', '1\n2\n')).toBe(4);
    const files = folder.chip({ id: 0, item: 0, window: { x: 0, y: 0, width: 4, height: 4 }, angle: 0 } as never, {} as never);
    await files.file('labels/1.xml', '<a/>');
    await expect(files.file('images/1.tfw/x', 'y')).rejects.toThrow(/cannot write/);
    expect(files.bytes).toBe(4);
    expect(readFileSync(join(dir, 'export', 'labels', '1.xml'), 'utf8')).toBe('<a/>');
  });

  it('writeAtomicOffThread: the same file as writeAtomicSync, written on the writer thread; the caller keeps its bytes', async () => {
    const bytes = new Uint8Array(200_000).map((_, i) => (i * 13) & 255);
    mkdirSync(join(dir, 'thread'), { recursive: true });
    const path = join(dir, 'thread', 'chip.tif');
    const writes = [writeAtomicOffThread(path, bytes), writeAtomicOffThread(join(dir, 'thread', 'chip.tfw'), 'é\n')];
    expect(bytes.length).toBe(200_000); // copied, not transferred
    expect(await Promise.all(writes)).toEqual([200_000, 3]);
    expect(readFileSync(path).equals(Buffer.from(bytes))).toBe(true);
    expect(readFileSync(join(dir, 'thread', 'chip.tfw'), 'utf8')).toBe('é\n');
    expect(readdirSync(join(dir, 'thread')).sort()).toEqual(['chip.tfw', 'chip.tif']);
  });

  it('writeAtomicOffThread: a failed write is IO_ERROR naming the file and its cause, with no temporary file left', async () => {
    const target = join(dir, 'taken-thread');
    mkdirSync(join(target, 'inside'), { recursive: true });
    const error = await writeAtomicOffThread(target, 'x').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EngineError);
    expect((error as EngineError).code).toBe('IO_ERROR');
    expect((error as EngineError).path).toBe('outputLocation');
    expect((error as EngineError).message).toContain(`cannot write ${target}`);
    expect(readdirSync(dir).filter((n) => n.includes('.part-'))).toEqual([]);
    // A missing folder (the writer thread makes none): ENOENT named.
    await expect(writeAtomicOffThread(join(dir, 'nowhere', 'x.txt'), 'x')).rejects.toThrow(/cannot write .*nowhere\/x\.txt.*ENOENT/);
  });
});

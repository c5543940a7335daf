import { spawnSync } from 'node:child_process';
import { deflateSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { codecThreadCount, deflateBlock, inflateBlock } from './codec-pool.js';
import { deflateZlib } from './deflate.js';

/** A 256 x 256 F32-sized block of compressible bytes (a ramp with noise). */
function block(seed: number): Uint8Array {
  const f = new Float32Array(256 * 256);
  let s = seed;
  for (let i = 0; i < f.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    f[i] = 100 + (i % 256) * 0.5 + (s % 7);
  }
  return new Uint8Array(f.buffer);
}

describe('codec threads', () => {
  it('deflate (libdeflate) and inflate off the main thread give what they give inline, whatever the order of completion', async () => {
    const inputs = Array.from({ length: 12 }, (_, i) => block(i + 1));
    const compressed = await Promise.all(inputs.map((b) => deflateBlock(b.slice(), 1, true)));
    compressed.forEach((c, i) => expect(Buffer.from(c).equals(deflateZlib(inputs[i]!, 1))).toBe(true));
    // libdeflate's stream, not node:zlib's (which differs for these blocks).
    expect(Buffer.from(compressed[0]!).equals(deflateSync(inputs[0]!, { level: 1 }))).toBe(false);
    const back = await Promise.all(compressed.map((c) => inflateBlock(c, inputs[0]!.length, false)));
    back.forEach((b, i) => expect(Buffer.from(b).equals(Buffer.from(inputs[i]!))).toBe(true));
    // Inputs not given up stay usable; small blocks are done inline.
    const keep = inputs[3]!;
    await inflateBlock(deflateSync(keep), keep.length, false);
    expect(keep.byteLength).toBe(256 * 256 * 4);
    const tiny = new Uint8Array(100).fill(7);
    expect(Buffer.from(await inflateBlock(await deflateBlock(tiny, 6), 100)).equals(Buffer.from(tiny))).toBe(true);
    expect(codecThreadCount()).toBeLessThanOrEqual(4);
  });

  it("a corrupt stream rejects with zlib's message, inline and off the main thread, and the threads keep working", async () => {
    const good = deflateSync(block(9));
    const bad = new Uint8Array(good); // a copy (Buffer#slice would be a view)
    bad.fill(0xff, 10, 60);
    const expected = (() => {
      try {
        inflateSync(bad);
        return '';
      } catch (e) {
        return (e as Error).message;
      }
    })();
    await expect(inflateBlock(bad, 256 * 256 * 4)).rejects.toThrow(expected);
    await expect(inflateBlock(bad.subarray(0, 40), 100)).rejects.toThrow();
    expect((await inflateBlock(good, 256 * 256 * 4)).length).toBe(256 * 256 * 4);
    // A Buffer not given up is copied, never detached.
    expect(good.byteLength).toBeGreaterThan(0);
    expect(good.buffer.byteLength).toBeGreaterThan(0);
  });
});

describe('idle threads never hold a process open', () => {
  // A process whose codec threads were started (a DEFLATE file opened) but got no job, or whose
  // worker pool was left undestroyed, must still exit once its work is done (a CLI render of a small
  // DEFLATE file once never exited: Worker#on('message') re-referenced the port unref() had released).
  const exitsAlone = (code: string): { status: number | null; timedOut: boolean } => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { ...process.env, RASTERFLOW_CODEC_THREADS: '2' },
      timeout: 30_000,
      killSignal: 'SIGKILL',
    });
    return { status: r.status, timedOut: (r.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT' };
  };

  it('warmed codec threads with no job', () => {
    expect(
      exitsAlone(
        "const m = await import('./src/io/codec-pool.ts'); m.warmCodecThreads(); if (m.codecThreadCount() !== 2) process.exit(5);",
      ),
    ).toEqual({ status: 0, timedOut: false });
  });

  it('codec threads after their jobs', () => {
    expect(
      exitsAlone(
        "const m = await import('./src/io/codec-pool.ts'); const d = await m.deflateBlock(new Uint8Array(1 << 20).fill(3), 6); await m.inflateBlock(d, 1 << 20);",
      ),
    ).toEqual({ status: 0, timedOut: false });
  });

  it('a tile worker pool never given a tile and never destroyed', () => {
    expect(exitsAlone("const m = await import('./src/workers/pool.ts'); m.createPool({ size: 1 });")).toEqual({
      status: 0,
      timedOut: false,
    });
  });
});

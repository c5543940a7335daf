import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.js';
import { abortError, clientKey, createFairSemaphore, requestSignal, serverBusy, type Slot } from './limits.js';
import { readParams, setBodyLimit, sharingError, transportStatus } from './rest.js';
import { setPeerAddress } from './site.js';

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

describe('serverBusy', () => {
  it('is SERVER_BUSY, answered with HTTP 200 and a 503 body whose details name the setting', () => {
    const e = serverBusy('maxRenders', 'all 4 renders are in use');
    expect(e.code).toBe('SERVER_BUSY');
    expect(e.message).toBe('The server is busy: all 4 renders are in use (maxRenders). Try again shortly.');
    expect(transportStatus(e)).toBe(200);
    const body = sharingError(e);
    expect(body.error.code).toBe(503);
    expect(body.error.details.join(' ')).toContain('maxRenders');
  });
});

describe('requestSignal', () => {
  it('aborts with TIMEOUT naming requestTimeoutMs and its value after the budget', async () => {
    const req = new Request('http://127.0.0.1/x');
    const { signal, dispose } = requestSignal(req, { requestTimeoutMs: 30 });
    expect(signal.aborted).toBe(false);
    await new Promise((r) => setTimeout(r, 60));
    expect(signal.aborted).toBe(true);
    const e = abortError(signal);
    expect(e.code).toBe('TIMEOUT');
    expect(e.message).toContain('requestTimeoutMs');
    expect(e.message).toContain('30 ms');
    expect(sharingError(e).error).toMatchObject({ code: 504 });
    dispose();
  });

  it('aborts with ABORTED when the client disconnects, and never times out with 0', async () => {
    const client = new AbortController();
    const req = new Request('http://127.0.0.1/x', { signal: client.signal });
    const { signal, dispose } = requestSignal(req, { requestTimeoutMs: 0 });
    await new Promise((r) => setTimeout(r, 20));
    expect(signal.aborted).toBe(false);
    client.abort();
    expect(signal.aborted).toBe(true);
    expect(abortError(signal).code).toBe('ABORTED');
    dispose();
  });

  it('dispose clears the timer', async () => {
    const { signal, dispose } = requestSignal(new Request('http://127.0.0.1/x'), { requestTimeoutMs: 20 });
    dispose();
    await new Promise((r) => setTimeout(r, 50));
    expect(signal.aborted).toBe(false);
  });

  it('is aborted at once for a request already aborted', () => {
    const client = new AbortController();
    client.abort();
    const { signal } = requestSignal(new Request('http://127.0.0.1/x', { signal: client.signal }), { requestTimeoutMs: 1000 });
    expect(abortError(signal).code).toBe('ABORTED');
  });
});

describe('clientKey', () => {
  const deps = { config: { trustedProxies: ['10.0.0.1'] } };
  it('is the known user when given', () => {
    const req = setPeerAddress(new Request('http://127.0.0.1/x'), '127.0.0.1');
    expect(clientKey(req, deps, { username: 'ana' })).toBe('user:ana');
    expect(clientKey(req, deps, 'bo')).toBe('user:bo');
  });
  it('is the peer address, believing X-Forwarded-For only from a trusted proxy', () => {
    const direct = setPeerAddress(new Request('http://h/x', { headers: { 'x-forwarded-for': '1.2.3.4' } }), '::ffff:192.168.1.9');
    expect(clientKey(direct, deps)).toBe('ip:192.168.1.9');
    const proxied = setPeerAddress(new Request('http://h/x', { headers: { 'x-forwarded-for': '9.9.9.9, 1.2.3.4' } }), '10.0.0.1');
    expect(clientKey(proxied, deps)).toBe('ip:1.2.3.4');
  });
});

describe('createFairSemaphore', () => {
  it('runs at most maxRunning and refuses past maxQueued with SERVER_BUSY naming maxQueuedRenders', async () => {
    const s = createFairSemaphore({ maxRunning: 2, maxQueued: 1, maxPerClient: Infinity });
    const a = await s.acquire('a');
    const b = await s.acquire('b');
    const c = s.acquire('c');
    await expect(s.acquire('d')).rejects.toMatchObject({ code: 'SERVER_BUSY', path: 'maxQueuedRenders' });
    expect(s.stats()).toMatchObject({ running: 2, queued: 1, peak: 2 });
    a.release();
    a.release();
    const slot = await c;
    expect(s.stats()).toMatchObject({ running: 2, queued: 0 });
    b.release();
    slot.release();
    expect(s.stats()).toMatchObject({ running: 0, queued: 0, clients: 0 });
  });

  it('refuses a client past maxPerClient (running + waiting), naming maxRendersPerClient', async () => {
    const s = createFairSemaphore({ maxRunning: 1, maxQueued: 100, maxPerClient: 2 });
    const first = await s.acquire('a');
    const second = s.acquire('a');
    const e = await s.acquire('a').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('SERVER_BUSY');
    expect((e as EngineError).message).toContain('maxRendersPerClient');
    // Another client is not affected.
    const other = s.acquire('b');
    first.release();
    (await second).release();
    (await other).release();
    // Its count went back down.
    (await s.acquire('a')).release();
  });

  it('grants round-robin: a client with 500 waiting does not starve one with 1', async () => {
    const s = createFairSemaphore({ maxRunning: 1, maxQueued: 1000, maxPerClient: 1000 });
    const holder = await s.acquire('greedy');
    const order: string[] = [];
    const all: Promise<void>[] = [];
    const run = (client: string): void => {
      all.push(
        s.acquire(client).then(async (slot: Slot) => {
          order.push(client);
          await tick();
          slot.release();
        }),
      );
    };
    for (let i = 0; i < 500; i++) run('greedy');
    run('modest');
    holder.release();
    await Promise.all(all);
    expect(order.length).toBe(501);
    // The modest client is served on the second grant, not after the 500.
    expect(order.indexOf('modest')).toBeLessThanOrEqual(1);
  });

  it('a waiter whose signal aborts leaves the queue with the signal reason and frees its count', async () => {
    const s = createFairSemaphore({ maxRunning: 1, maxQueued: 10, maxPerClient: 1 });
    const held = await s.acquire('a');
    const ctl = new AbortController();
    const waiting = s.acquire('b', ctl.signal);
    ctl.abort(serverBusy('x', 'y'));
    await expect(waiting).rejects.toMatchObject({ code: 'SERVER_BUSY' });
    expect(s.stats()).toMatchObject({ queued: 0, clients: 1 });
    held.release();
    (await s.acquire('b')).release();
  });

  it('maxQueued 0: nobody waits', async () => {
    const s = createFairSemaphore({ maxRunning: 1, maxQueued: 0, maxPerClient: 10 });
    const held = await s.acquire('a');
    await expect(s.acquire('b')).rejects.toMatchObject({ code: 'SERVER_BUSY', path: 'maxQueuedRenders' });
    held.release();
  });
});

describe('maxBodyBytes recorded on a request (setBodyLimit)', () => {
  const form = (n: number): Request =>
    new Request('http://127.0.0.1/x', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `a=${'x'.repeat(n)}`,
    });
  it('applies to readParams and is named in the 413; an explicit option wins and names its own setting or none', async () => {
    const e = await readParams(setBodyLimit(form(100), 50)).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'LIMIT_EXCEEDED', path: 'body', httpStatus: 413 });
    expect((e as EngineError).message).toContain('50 bytes (maxBodyBytes)');
    expect((await readParams(setBodyLimit(form(100), 1000))).get('a')).toHaveLength(100);
    const own = await readParams(setBodyLimit(form(100), 1000), { maxBodyBytes: 20 }).catch((x: unknown) => x);
    expect((own as EngineError).message).toMatch(/20 bytes$/);
    const named = await readParams(form(100), { maxBodyBytes: 20, limitName: 'importBytes' }).catch((x: unknown) => x);
    expect((named as EngineError).message).toContain('20 bytes (importBytes)');
  });
});

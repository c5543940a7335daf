import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_AUDIENCE, jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import type { Logger, WebhookRecord } from '../site.js';
import { serviceRoutes } from './services.js';
import { deliveryBody, signatureOf, startWebhookDelivery, type WebhookDelivery, type WebhookDeliveryOptions } from './webhook-delivery.js';

interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

type Responder = (r: Received, n: number) => Promise<{ status: number; delayMs?: number; headers?: Record<string, string> }>;

/** A real HTTP receiver on 127.0.0.1 (port 0) that records every request. */
async function receiver(): Promise<{ base: string; received: Received[]; respond(fn: Responder): void; close(): Promise<void> }> {
  const received: Received[] = [];
  let responder: Responder = async () => ({ status: 200 });
  const server: Server = createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(r);
      void responder(r, received.length).then(async ({ status, delayMs, headers }) => {
        if (delayMs) await new Promise((ok) => setTimeout(ok, delayMs));
        if (res.destroyed) return;
        res.writeHead(status, headers);
        res.end('ok');
      });
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    received,
    respond: (fn) => void (responder = fn),
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

const GP = 'Tools/Chips.GPServer';
const FS = 'Parcels.FeatureServer';

let site: TestSite;
let rx: Awaited<ReturnType<typeof receiver>>;
let delivery: WebhookDelivery | undefined;
let warnings: string[];
const logger: Logger = { info: () => undefined, warn: (msg) => void warnings.push(msg) };

beforeEach(async () => {
  site = await testSite();
  rx = await receiver();
  warnings = [];
  const now = site.clock.now();
  await site.store.putService({ folder: 'Tools', serviceName: 'Chips', type: 'GPServer', properties: {}, created: now });
  await site.store.putService({ folder: '', serviceName: 'Parcels', type: 'FeatureServer', properties: {}, created: now });
});

afterEach(async () => {
  delivery?.stop();
  delivery = undefined;
  await rx.close();
});

function start(options: WebhookDeliveryOptions = {}): WebhookDelivery {
  delivery = startWebhookDelivery({ ...site, log: logger }, site.on, { backoffMs: 20, ...options });
  return delivery;
}

async function addHook(service: string, o: Partial<WebhookRecord> = {}): Promise<WebhookRecord> {
  const h: WebhookRecord = {
    id: `h${Math.random().toString(16).slice(2, 10)}`,
    service,
    name: 'notify',
    changeTypes: ['*'],
    hookUrl: `${rx.base}/hook`,
    signatureKey: '',
    active: true,
    created: site.clock.now(),
    ...o,
  };
  await site.store.putWebhook(h);
  return h;
}

const succeeded = (jobId = 'j1') => ({ service: GP, changeType: 'jobSucceeded', payload: { jobId, jobStatus: 'geoJobSucceeded' } });

describe('webhook delivery', () => {
  it('POSTs the JSON payload with its headers, signed so that the receiver can verify it', async () => {
    await addHook(GP, { name: 'signed', signatureKey: 'k3y', hookUrl: `${rx.base}/signed?x=1` });
    await addHook(GP, { name: 'plain', hookUrl: `${rx.base}/plain` });
    const d = start();
    site.emit(succeeded());
    await d.drain();
    expect(rx.received).toHaveLength(2);
    const signed = rx.received.find((r) => r.path === '/signed?x=1')!;
    const plain = rx.received.find((r) => r.path === '/plain')!;
    expect(signed.method).toBe('POST');
    expect(signed.headers['content-type']).toBe('application/json');
    expect(signed.headers['user-agent']).toBe('rasterflow');
    expect(signed.headers['x-geo-event']).toBe('jobSucceeded');
    expect(signed.headers['x-geo-delivery']).toMatch(/^[0-9a-f-]{36}$/);
    expect(plain.headers['x-geo-delivery']).not.toBe(signed.headers['x-geo-delivery']);
    // The receiver's check: HMAC-SHA256 of the raw body with the shared key.
    const expected = `sha256=${createHmac('sha256', 'k3y').update(Buffer.from(signed.body, 'utf8')).digest('hex')}`;
    expect(signed.headers['x-geo-signature']).toBe(expected);
    expect(plain.headers['x-geo-signature']).toBeUndefined();
    expect(JSON.parse(signed.body)).toEqual({
      name: 'signed',
      serviceName: 'Tools/Chips',
      serviceType: 'GPServer',
      changeType: 'jobSucceeded',
      events: [{ jobId: 'j1', jobStatus: 'geoJobSucceeded', eventTime: site.clock.now() }],
    });
    expect(JSON.parse(plain.body)).toMatchObject({ name: 'plain' });
  });

  it('body and signature helpers are what is sent', () => {
    const body = deliveryBody({ name: 'n' }, { service: FS, changeType: 'FeaturesCreated', payload: { a: 1 } }, 5);
    expect(body).toBe(
      '{"name":"n","serviceName":"Parcels","serviceType":"FeatureServer","changeType":"FeaturesCreated","events":[{"a":1,"eventTime":5}]}',
    );
    expect(signatureOf(body, 'k')).toBe(`sha256=${createHmac('sha256', 'k').update(body).digest('hex')}`);
  });

  it('retries after a 500 with backoff, with the same delivery id, then succeeds', async () => {
    await addHook(GP);
    const times: number[] = [];
    rx.respond(async (_r, n) => {
      times.push(Date.now());
      return { status: n === 1 ? 500 : 204 };
    });
    const d = start({ backoffMs: 60 });
    site.emit(succeeded());
    await d.drain();
    expect(rx.received).toHaveLength(2);
    expect(rx.received[0]!.headers['x-geo-delivery']).toBe(rx.received[1]!.headers['x-geo-delivery']);
    expect(rx.received[0]!.body).toBe(rx.received[1]!.body);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(55);
    expect(warnings).toEqual([]);
  });

  it('gives up after the attempts, doubling the wait, and says so', async () => {
    await addHook(GP);
    const times: number[] = [];
    rx.respond(async () => {
      times.push(Date.now());
      return { status: 503 };
    });
    const d = start({ attempts: 3, backoffMs: 40 });
    site.emit(succeeded());
    await d.drain();
    expect(rx.received).toHaveLength(3);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(75);
    expect(warnings).toEqual(['webhook delivery failed']);
  });

  it('retries after a timeout and does not follow redirects', async () => {
    await addHook(GP, { hookUrl: `${rx.base}/slow` });
    await addHook(GP, { name: 'moved', hookUrl: `${rx.base}/moved` });
    rx.respond(async (r) =>
      r.path === '/slow'
        ? { status: 200, delayMs: 800 }
        : r.path === '/moved'
          ? { status: 302, headers: { location: `${rx.base}/elsewhere` } }
          : { status: 200 },
    );
    const d = start({ attempts: 2, timeoutMs: 250 });
    site.emit(succeeded());
    await d.drain();
    expect(rx.received.filter((r) => r.path === '/slow')).toHaveLength(2);
    expect(rx.received.filter((r) => r.path === '/moved')).toHaveLength(2);
    expect(rx.received.filter((r) => r.path === '/elsewhere')).toHaveLength(0);
    expect(warnings).toEqual(['webhook delivery failed', 'webhook delivery failed']);
  });

  it('delivers only to hooks whose change types match (or *), of the event service only', async () => {
    await addHook(GP, { name: 'ok', changeTypes: ['jobSucceeded'], hookUrl: `${rx.base}/ok` });
    await addHook(GP, { name: 'all', changeTypes: ['*'], hookUrl: `${rx.base}/all` });
    await addHook(GP, { name: 'case', changeTypes: ['JOBSUCCEEDED'], hookUrl: `${rx.base}/case` });
    await addHook(GP, { name: 'failed', changeTypes: ['jobFailed'], hookUrl: `${rx.base}/failed` });
    await addHook(FS, { name: 'fs', changeTypes: ['*'], hookUrl: `${rx.base}/fs` });
    const d = start();
    site.emit(succeeded());
    await d.drain();
    expect(rx.received.map((r) => r.path).sort()).toEqual(['/all', '/case', '/ok']);
    site.emit({ service: GP, changeType: 'jobFailed', payload: {} });
    await d.drain();
    expect(rx.received.map((r) => r.path).sort()).toEqual(['/all', '/all', '/case', '/failed', '/ok']);
  });

  it('sends nothing while deactivated, replays nothing after activateAll, delivers again afterwards', async () => {
    await addHook(GP);
    const routes = serviceRoutes(site);
    const admin = await site.token('admin', { audience: ADMIN_AUDIENCE });
    await site.addUser('admin', 'administrator');
    const op = async (name: string) =>
      jsonOf(await routes[1]!.handler(siteRequest(`/server/admin/services/${GP}/webhooks/${name}`, { form: { f: 'json', token: admin } })));
    const d = start();
    expect(await op('deactivateAll')).toEqual({ status: 'success' });
    site.emit(succeeded('while-off'));
    await d.drain();
    expect(rx.received).toHaveLength(0);
    expect(await op('activateAll')).toEqual({ status: 'success' });
    await d.drain();
    await new Promise((ok) => setTimeout(ok, 50));
    expect(rx.received).toHaveLength(0);
    site.emit(succeeded('after'));
    await d.drain();
    expect(rx.received).toHaveLength(1);
    expect(JSON.parse(rx.received[0]!.body).events[0].jobId).toBe('after');
  });

  it('stops retrying once the hook is deactivated or deleted', async () => {
    const h = await addHook(GP);
    const other = await addHook(FS, { hookUrl: `${rx.base}/fs` });
    rx.respond(async (r) => {
      if (r.path === '/hook') await site.store.setWebhooksActive(GP, false);
      else await site.store.deleteWebhook(other.id);
      return { status: 500 };
    });
    const d = start();
    site.emit(succeeded());
    site.emit({ service: FS, changeType: 'FeaturesCreated', payload: {} });
    await d.drain();
    expect(rx.received.map((r) => r.path).sort()).toEqual(['/fs', '/hook']);
    expect((await site.store.listWebhooks(GP)).find((x) => x.id === h.id)!.active).toBe(false);
  });

  it('drain waits for deliveries in flight', async () => {
    await addHook(GP);
    rx.respond(async () => ({ status: 200, delayMs: 150 }));
    const d = start();
    const t0 = Date.now();
    site.emit(succeeded());
    await d.drain();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    expect(rx.received).toHaveLength(1);
    await d.drain();
  });

  it('bounds concurrency and the queue, and uses the fetch it is given', async () => {
    await addHook(GP);
    let calls = 0;
    let inFlight = 0;
    let most = 0;
    rx.respond(async () => ({ status: 200, delayMs: 40 }));
    const counting: typeof fetch = async (input, init) => {
      calls++;
      most = Math.max(most, ++inFlight);
      try {
        return await fetch(input, init);
      } finally {
        inFlight--;
      }
    };
    const d = start({ concurrency: 1, maxQueue: 2, fetch: counting });
    for (let i = 0; i < 5; i++) site.emit(succeeded(`j${i}`));
    await d.drain();
    expect(calls).toBe(3);
    expect(most).toBe(1);
    expect(rx.received.map((r) => JSON.parse(r.body).events[0].jobId)).toEqual(['j0', 'j1', 'j2']);
    expect(warnings.filter((w) => w.includes('queue is full'))).toHaveLength(2);
  });

  it('stop() stops listening and aborts what is waiting', async () => {
    await addHook(GP);
    rx.respond(async () => ({ status: 500 }));
    const d = start({ backoffMs: 10_000 });
    site.emit(succeeded());
    await new Promise((ok) => setTimeout(ok, 100));
    expect(rx.received).toHaveLength(1);
    const t0 = Date.now();
    d.stop();
    await d.drain();
    expect(Date.now() - t0).toBeLessThan(1000);
    site.emit(succeeded('late'));
    await new Promise((ok) => setTimeout(ok, 50));
    expect(rx.received).toHaveLength(1);
  });
});

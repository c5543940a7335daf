/**
 * Webhook delivery (seed Events, protocols.md §2.1 rules 1-2). For each site event, every active
 * webhook of the event's service whose change types include the event's (or `*`) receives one HTTP
 * POST. The contract is silent on the wire format, so (Decision):
 *
 * - Body (JSON, UTF-8):
 *   `{"name":<hook name>,"serviceName":<[folder/]name>,"serviceType":<type>,"changeType":<type>,
 *     "events":[{...event payload,"eventTime":<epoch ms>}]}`.
 * - Headers: `Content-Type: application/json`, `User-Agent: rasterflow`, `X-Geo-Event: <changeType>`,
 *   `X-Geo-Delivery: <random id, the same on every retry of one delivery>` and, when the hook has a
 *   signature key, `X-Geo-Signature: sha256=<hex HMAC-SHA256 of the exact body bytes with the key>`.
 * - A 2xx answer is a success. Network errors, timeouts and every other status (redirects are not
 *   followed) are retried with exponential backoff: 4 attempts by default, 1 s, 2 s, 4 s apart.
 * - The hook is read again before each attempt: a deleted or deactivated hook gets nothing more.
 *   Events raised while the hooks are deactivated are dropped, never replayed after activateAll.
 * - Deliveries run at most `concurrency` at a time; at most `maxQueue` wait; beyond that new
 *   deliveries are dropped with a warning (a slow receiver cannot exhaust memory).
 * - Change types match case-insensitively.
 * - Deliveries of one hook may overlap and arrive out of order; receivers order by `eventTime` and
 *   may drop repeats by `X-Geo-Delivery`.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { SiteDeps, SiteEvent, WebhookRecord } from '../site.js';

export interface WebhookDeliveryOptions {
  /** The fetch to use (tests; a proxying fetch). Default: the global fetch. */
  readonly fetch?: typeof fetch;
  /** Attempts per delivery, first one included (default 4). */
  readonly attempts?: number;
  /** Wait before the first retry; doubled before each later one (default 1000 ms). */
  readonly backoffMs?: number;
  /** Time allowed for one attempt, answer headers included (default 10000 ms). */
  readonly timeoutMs?: number;
  /** Deliveries in flight at once (default 4). */
  readonly concurrency?: number;
  /** Deliveries waiting at most (default 1000). */
  readonly maxQueue?: number;
}

export interface WebhookDelivery {
  /** Resolves when every event received so far has been delivered or given up. */
  drain(): Promise<void>;
  /** Stops listening, drops waiting deliveries and aborts those in flight. */
  stop(): void;
}

interface Job {
  readonly hookId: string;
  readonly event: SiteEvent;
  readonly eventTime: number;
  readonly deliveryId: string;
}

export const matchesChangeType = (hook: Pick<WebhookRecord, 'changeTypes'>, changeType: string): boolean =>
  hook.changeTypes.some((t) => t === '*' || t.toLowerCase() === changeType.toLowerCase());

/** `folder/name.Type` -> `{serviceName: 'folder/name', serviceType: 'Type'}`. */
function splitServiceKey(key: string): { serviceName: string; serviceType: string } {
  const dot = key.lastIndexOf('.');
  return dot < 0 ? { serviceName: key, serviceType: '' } : { serviceName: key.slice(0, dot), serviceType: key.slice(dot + 1) };
}

/** The exact body sent for `event` to `hook` (Decision above). */
export function deliveryBody(hook: Pick<WebhookRecord, 'name'>, event: SiteEvent, eventTime: number): string {
  return JSON.stringify({
    name: hook.name,
    ...splitServiceKey(event.service),
    changeType: event.changeType,
    events: [{ ...event.payload, eventTime }],
  });
}

/** `sha256=<hex HMAC-SHA256(body, key)>`. */
export const signatureOf = (body: string, key: string): string => `sha256=${createHmac('sha256', key).update(body, 'utf8').digest('hex')}`;

/** Starts delivering the events `subscribe` hands over. */
export function startWebhookDelivery(
  deps: Pick<SiteDeps, 'store' | 'clock' | 'log'>,
  subscribe: (listener: (e: SiteEvent) => void) => () => void,
  options: WebhookDeliveryOptions = {},
): WebhookDelivery {
  const doFetch = options.fetch ?? fetch;
  const attempts = Math.max(1, options.attempts ?? 4);
  const backoffMs = options.backoffMs ?? 1000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const maxQueue = Math.max(1, options.maxQueue ?? 1000);

  const queue: Job[] = [];
  let running = 0;
  /** Events being resolved into jobs + jobs queued + jobs in flight. */
  let pending = 0;
  let stopped = false;
  const stopper = new AbortController();
  const waiters: (() => void)[] = [];

  const settle = (): void => {
    pending--;
    if (pending === 0) for (const w of waiters.splice(0)) w();
  };

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      if (stopped) return resolve();
      const t = setTimeout(done, ms);
      function done(): void {
        clearTimeout(t);
        stopper.signal.removeEventListener('abort', done);
        resolve();
      }
      stopper.signal.addEventListener('abort', done);
    });

  const currentHook = async (job: Job): Promise<WebhookRecord | undefined> =>
    (await deps.store.listWebhooks(job.event.service)).find((h) => h.id === job.hookId);

  async function deliver(job: Job): Promise<void> {
    let last = '';
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (stopped) return;
      const hook = await currentHook(job);
      if (!hook || !hook.active || !matchesChangeType(hook, job.event.changeType)) {
        deps.log.info('webhook delivery dropped: the webhook is gone or inactive', { webhook: job.hookId, delivery: job.deliveryId });
        return;
      }
      const body = deliveryBody(hook, job.event, job.eventTime);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'rasterflow',
        'x-geo-event': job.event.changeType,
        'x-geo-delivery': job.deliveryId,
      };
      if (hook.signatureKey !== '') headers['x-geo-signature'] = signatureOf(body, hook.signatureKey);
      try {
        const res = await doFetch(hook.hookUrl, {
          method: 'POST',
          headers,
          body,
          redirect: 'manual',
          signal: AbortSignal.any([stopper.signal, AbortSignal.timeout(timeoutMs)]),
        });
        await res.body?.cancel().catch(() => undefined);
        if (res.status >= 200 && res.status < 300) return;
        last = `HTTP ${res.status}`;
      } catch (e) {
        last = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      }
      if (attempt < attempts) await sleep(backoffMs * 2 ** (attempt - 1));
    }
    if (!stopped) deps.log.warn('webhook delivery failed', { webhook: job.hookId, delivery: job.deliveryId, attempts, error: last });
  }

  function pump(): void {
    while (!stopped && running < concurrency && queue.length > 0) {
      const job = queue.shift()!;
      running++;
      void deliver(job)
        .catch((e: unknown) => deps.log.warn('webhook delivery crashed', { webhook: job.hookId, error: String(e) }))
        .finally(() => {
          running--;
          settle();
          pump();
        });
    }
  }

  async function enqueue(event: SiteEvent, eventTime: number): Promise<void> {
    const hooks = await deps.store.listWebhooks(event.service);
    for (const hook of hooks) {
      if (stopped || !hook.active || !matchesChangeType(hook, event.changeType)) continue;
      if (queue.length >= maxQueue) {
        deps.log.warn('webhook delivery dropped: the queue is full', { webhook: hook.id, changeType: event.changeType });
        continue;
      }
      pending++;
      queue.push({ hookId: hook.id, event, eventTime, deliveryId: randomUUID() });
    }
    pump();
  }

  const unsubscribe = subscribe((event) => {
    if (stopped) return;
    pending++;
    enqueue(event, deps.clock.now())
      .catch((e: unknown) => deps.log.warn('webhook delivery could not read the webhooks', { service: event.service, error: String(e) }))
      .finally(settle);
  });

  return {
    drain: () => (pending === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    stop: () => {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      const dropped = queue.splice(0);
      for (let i = 0; i < dropped.length; i++) settle();
      stopper.abort();
    },
  };
}

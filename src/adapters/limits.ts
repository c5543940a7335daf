/**
 * The site's limits at work (issue 20 item 2): the time budget of a request as an AbortSignal, the
 * client a render is counted against, the "server busy" error, and a fair bounded semaphore that
 * the image service (renders) and the map service (tiles) take their slots from.
 *
 * Every error names the setting of the config file that was met (`maxRenders`, `requestTimeoutMs`,
 * ...), in its message, its `path` and its `details` (SERVER_BUSY and TIMEOUT show their details on
 * the wire although they are 5xx codes).
 */
import { EngineError } from '../core/errors.js';
import { clientAddress, type SiteConfig, type SiteLimits } from './site.js';

// ---------------------------------------------------------------------------------------------
// Errors

/**
 * SERVER_BUSY (REST body code 503, HTTP 200; SOAP Server fault): "The server is busy: <detail>
 * (<limitName>). Try again shortly.", with the setting as the path and the sentence as the details.
 */
export function serverBusy(limitName: string, detail: string): EngineError {
  const message = `The server is busy: ${detail} (${limitName}). Try again shortly.`;
  return new EngineError('SERVER_BUSY', message, { path: limitName, details: [message] });
}

/** TIMEOUT (REST body code 504): the request's render went past `requestTimeoutMs`. */
export function requestTimeout(ms: number): EngineError {
  const message = `The request took longer than ${ms} ms, the most the server allows for one request (requestTimeoutMs).`;
  return new EngineError('TIMEOUT', message, { path: 'requestTimeoutMs', details: [message] });
}

/** ABORTED: the client went away (or the host cancelled the request). */
export const requestAborted = (): EngineError => new EngineError('ABORTED', 'the request was aborted');

/**
 * The error a render stopped by `signal` ends with: the signal's reason when it is an EngineError
 * (TIMEOUT from `requestSignal`), else ABORTED.
 */
export function abortError(signal: AbortSignal | undefined): EngineError {
  const reason: unknown = signal?.reason;
  return reason instanceof EngineError ? reason : requestAborted();
}

/** Throws `abortError(signal)` when `signal` has aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal);
}

// ---------------------------------------------------------------------------------------------
// The time budget of a request

export interface RequestSignal {
  /** Aborts when the client disconnects (reason ABORTED) or the budget runs out (reason TIMEOUT). */
  readonly signal: AbortSignal;
  /** Clears the timer and the listener on the request; call it when the work is over (finally). */
  dispose(): void;
}

/**
 * The signal a request's work watches: aborted when `req.signal` aborts (the client disconnected)
 * or after `limits.requestTimeoutMs` ms (0: never), its `reason` then being the TIMEOUT EngineError
 * naming requestTimeoutMs.
 */
export function requestSignal(req: Request, limits: Pick<SiteLimits, 'requestTimeoutMs'>): RequestSignal {
  return budgetSignal(limits, req.signal as AbortSignal | undefined);
}

/**
 * `requestSignal` for work that no single client owns (a render several clients wait for): the time
 * budget, and `parent`'s abort when one is given.
 */
export function budgetSignal(limits: Pick<SiteLimits, 'requestTimeoutMs'>, parent?: AbortSignal): RequestSignal {
  const controller = new AbortController();
  const onParentAbort = (): void => controller.abort(requestAborted());
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (parent?.aborted) controller.abort(requestAborted());
  else {
    parent?.addEventListener('abort', onParentAbort, { once: true });
    const ms = limits.requestTimeoutMs;
    if (ms > 0 && Number.isFinite(ms)) {
      timer = setTimeout(() => controller.abort(requestTimeout(ms)), ms);
      // The budget never keeps a process alive on its own.
      timer.unref?.();
    }
  }
  return {
    signal: controller.signal,
    dispose() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      parent?.removeEventListener('abort', onParentAbort);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Who a render is counted against

/**
 * The client a render is counted against: `user:<name>` when the request was signed in (pass the
 * caller the handler already verified: its token is not verified twice), else `ip:<address>`, the
 * client address as the token binding sees it (X-Forwarded-For believed only from trustedProxies).
 * Decision: a request whose token was not verified by the handler counts against its address: an
 * unverified token names nobody (anyone can write any username into one).
 */
export function clientKey(
  req: Request,
  deps: { readonly config: Pick<SiteConfig, 'trustedProxies'> },
  user?: string | { readonly username: string },
): string {
  const name = typeof user === 'string' ? user : user?.username;
  if (name !== undefined && name !== '') return `user:${name}`;
  return `ip:${clientAddress(req, deps.config) || 'unknown'}`;
}

// ---------------------------------------------------------------------------------------------
// A fair bounded semaphore

export interface FairSemaphoreOptions {
  /** Holders at once (at least 1). */
  readonly maxRunning: number;
  /** Waiters in all beyond which `acquire` answers SERVER_BUSY (0: nobody waits). */
  readonly maxQueued: number;
  /** Holders plus waiters of one client beyond which it gets SERVER_BUSY (Infinity: no limit). */
  readonly maxPerClient: number;
  /** The settings named in the errors (defaults: the render settings). */
  readonly names?: { readonly running?: string; readonly queued?: string; readonly perClient?: string };
  /** What is being limited, plural, for the errors (default 'renders'). */
  readonly what?: string;
}

/** A held slot: call `release()` once when the work is over (a second call does nothing). */
export interface Slot {
  release(): void;
}

export interface SemaphoreStats {
  readonly running: number;
  readonly queued: number;
  readonly peak: number;
  readonly limit: number;
  /** Clients holding or waiting for a slot. */
  readonly clients: number;
}

export interface FairSemaphore {
  /**
   * A slot for `client`: at once when one is free and nobody waits, else after waiting its turn.
   * Rejects with SERVER_BUSY when the client already holds or waits for `maxPerClient` slots or the
   * queue is full, and with `abortError(signal)` when `signal` aborts while it waits.
   */
  acquire(client: string, signal?: AbortSignal): Promise<Slot>;
  stats(): SemaphoreStats;
}

interface Waiter {
  readonly client: string;
  grant(): void;
}

/**
 * A counting semaphore whose waiters are served round-robin across clients: when a slot frees, the
 * client that was served longest ago among those waiting gets it, so a client with 500 requests
 * waiting delays one with a single request by at most one turn per other waiting client.
 */
export function createFairSemaphore(options: FairSemaphoreOptions): FairSemaphore {
  const maxRunning = Math.max(1, options.maxRunning);
  const { maxQueued, maxPerClient } = options;
  const names = {
    running: options.names?.running ?? 'maxRenders',
    queued: options.names?.queued ?? 'maxQueuedRenders',
    perClient: options.names?.perClient ?? 'maxRendersPerClient',
  };
  const what = options.what ?? 'renders';
  let running = 0;
  let queued = 0;
  let peak = 0;
  /** Holders plus waiters per client. */
  const perClient = new Map<string, number>();
  /** Waiters per client, FIFO; the Map's order is the round-robin order (a served client moves to the end). */
  const queues = new Map<string, Waiter[]>();

  const forget = (client: string): void => {
    const n = (perClient.get(client) ?? 1) - 1;
    if (n <= 0) perClient.delete(client);
    else perClient.set(client, n);
  };

  const take = (client: string): Slot => {
    running++;
    if (running > peak) peak = running;
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        running--;
        forget(client);
        grantNext();
      },
    };
  };

  function grantNext(): void {
    while (running < maxRunning && queued > 0) {
      const first = queues.entries().next();
      if (first.done === true) return;
      const [client, q] = first.value;
      const w = q.shift()!;
      queued--;
      queues.delete(client);
      if (q.length > 0) queues.set(client, q);
      w.grant();
    }
  }

  const remove = (w: Waiter): boolean => {
    const q = queues.get(w.client);
    const i = q ? q.indexOf(w) : -1;
    if (!q || i < 0) return false;
    q.splice(i, 1);
    if (q.length === 0) queues.delete(w.client);
    queued--;
    return true;
  };

  return {
    acquire(client, signal) {
      if (signal?.aborted) return Promise.reject(abortError(signal));
      const mine = perClient.get(client) ?? 0;
      if (mine >= maxPerClient) {
        return Promise.reject(
          serverBusy(names.perClient, `this client already has ${mine} ${what} running or waiting, the most one client may have`),
        );
      }
      if (running < maxRunning && queued === 0) {
        perClient.set(client, mine + 1);
        return Promise.resolve(take(client));
      }
      if (queued >= maxQueued) {
        return Promise.reject(
          serverBusy(
            names.queued,
            maxQueued === 0
              ? `all ${maxRunning} ${what} the server runs at once (${names.running}) are in use`
              : `${queued} ${what} are already waiting for one of the ${maxRunning} the server runs at once`,
          ),
        );
      }
      perClient.set(client, mine + 1);
      return new Promise<Slot>((resolve, reject) => {
        const onAbort = (): void => {
          if (!remove(w)) return;
          forget(client);
          reject(abortError(signal));
        };
        const w: Waiter = {
          client,
          grant: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve(take(client));
          },
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        let q = queues.get(client);
        if (!q) queues.set(client, (q = []));
        q.push(w);
        queued++;
      });
    },
    stats: () => ({ running, queued, peak, limit: maxRunning, clients: perClient.size }),
  };
}

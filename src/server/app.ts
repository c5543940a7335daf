/**
 * The Hono application of `rasterflow serve`: every adapter Route mounted as it is, the socket peer
 * recorded on each Request (setPeerAddress) before the handler sees it, a JSON 404 for unknown paths,
 * a 500 without internals for a handler that crashes, and one log line per request with secrets
 * stripped (protocols.md §6 Logging).
 */
import { Hono, type Context } from 'hono';
import { EngineError } from '../core/errors.js';
import { errorResponse, type Route } from '../adapters/rest.js';
import { setPeerAddress, type Logger, type SiteDeps } from '../adapters/site.js';

export interface AppOptions {
  /** Where request lines go (default the site's logger). */
  readonly log?: Logger;
}

/** What @hono/node-server puts in `c.env`: the node request, whose socket has the peer address. */
interface NodeBindings {
  readonly incoming?: { readonly socket?: { readonly remoteAddress?: string } };
}

/**
 * Decision: a query parameter is redacted in the log when its lower-case name contains `token`,
 * `password`, `secret` or `signature`, or is `code` or `key` (OAuth codes, webhook signature keys).
 * This covers token, password, client_secret, code and refresh_token and their relatives
 * (access_token, newPassword, signatureKey). Headers and bodies are never logged at all.
 */
export function isSecretParam(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'code' || n === 'key' || /token|password|secret|signature/.test(n);
}

/** `pathname?query` with secret values replaced by `***` (names kept, so the log still says what was sent). */
export function redactedTarget(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return '(unparsable URL)';
  }
  if (u.search === '') return u.pathname;
  const parts: string[] = [];
  for (const [name, value] of u.searchParams) {
    parts.push(`${encodeURIComponent(name)}=${isSecretParam(name) ? '***' : encodeURIComponent(value)}`);
  }
  return `${u.pathname}?${parts.join('&')}`;
}

const NOT_FOUND_BODY = JSON.stringify({ error: { code: 404, message: 'Not found.', details: [] } });

/** The error shape of a path: admin under `/server/admin`, sharing elsewhere. */
const shapeOf = (path: string): 'admin' | 'sharing' => (/^\/server\/admin(\/|$)/i.test(path) ? 'admin' : 'sharing');

function peerOf(env: unknown): string | undefined {
  return (env as NodeBindings | undefined)?.incoming?.socket?.remoteAddress;
}

/** A Hono app serving `routes`; `ALL` routes take every method. */
export function createApp(site: Pick<SiteDeps, 'log'>, routes: readonly Route[], options: AppOptions = {}): Hono {
  const log = options.log ?? site.log;
  // Decision: a trailing slash is ignored (`/server/rest/services/` is `/server/rest/services`), as
  // the vendor's servers do.
  const app = new Hono({ strict: false });

  app.use('*', async (c, next) => {
    const started = performance.now();
    const peer = peerOf(c.env);
    if (peer !== undefined) setPeerAddress(c.req.raw, peer);
    await next();
    log.info('request', {
      method: c.req.method,
      path: redactedTarget(c.req.url),
      status: c.res.status,
      ms: Math.round((performance.now() - started) * 10) / 10,
      client: peer ?? '',
    });
  });

  for (const route of routes) {
    const h = (c: Context): Promise<Response> => route.handler(c.req.raw);
    if (route.method === 'ALL') app.all(route.path, h);
    else if (route.method === 'GET') app.get(route.path, h);
    else app.post(route.path, h);
  }

  // Decision: an unknown path answers HTTP 404 with the sharing error body, whatever the family.
  app.notFound(
    () =>
      new Response(NOT_FOUND_BODY, {
        status: 404,
        headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
      }),
  );

  app.onError((err, c) => {
    // The message of a crash may hold anything: it goes to the log (never a stack), not to the client.
    log.warn('handler failed', {
      method: c.req.method,
      path: redactedTarget(c.req.url),
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
    return errorResponse(shapeOf(new URL(c.req.url).pathname), new EngineError('INTERNAL', 'the request handler failed'), 'json');
  });

  return app;
}

/**
 * CORS for the image service, per service: `properties.cors` of the service record, else a site
 * default passed by the host (none by default: no cross-origin access).
 *
 * ```json
 * "cors": {"origins": ["https://a.example"], "allowCredentials": false, "maxAge": 600}
 * ```
 *
 * - `origins`: exact origins (scheme://host[:port], compared case-insensitively on scheme and host);
 *   `"*"` allows every origin. The answer always echoes the request's origin (never `*`), with
 *   `Vary: Origin`, so caches keep answers for different origins apart.
 * - Preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`): 204 with the allowed
 *   methods (GET, POST, OPTIONS), the allowed request headers (`X-Geo-Authorization`,
 *   `X-Esri-Authorization`, `Authorization`, `Content-Type`, `If-None-Match`) and `maxAge`.
 *   A refused origin or method gets 204 without any `Access-Control-*` header: the browser then
 *   blocks the request. Decision: a refused preflight is not an error body, as browsers ignore bodies.
 * - Credentials (`Access-Control-Allow-Credentials: true`) only with `allowCredentials: true`.
 * - Exposed response headers: `ETag`, `Content-Disposition` (so clients can read a tile's validator).
 */
import type { Handler } from '../rest.js';

export interface CorsPolicy {
  readonly origins: readonly string[];
  readonly allowCredentials?: boolean;
  /** Seconds a preflight may be cached by the browser (default 600). */
  readonly maxAge?: number;
}

export const CORS_METHODS = ['GET', 'POST', 'OPTIONS'] as const;
export const CORS_HEADERS = ['X-Geo-Authorization', 'X-Esri-Authorization', 'Authorization', 'Content-Type', 'If-None-Match'] as const;
export const CORS_EXPOSED = ['ETag', 'Content-Disposition'] as const;

/** The policy of a service's properties, else `siteDefault`; undefined when neither allows anything. */
export function corsPolicyOf(properties: Readonly<Record<string, unknown>> | undefined, siteDefault?: CorsPolicy): CorsPolicy | undefined {
  const raw = properties?.['cors'];
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    const o = raw as Record<string, unknown>;
    const origins = Array.isArray(o['origins']) ? o['origins'].filter((x): x is string => typeof x === 'string') : [];
    return {
      origins,
      allowCredentials: o['allowCredentials'] === true,
      ...(typeof o['maxAge'] === 'number' && o['maxAge'] >= 0 ? { maxAge: Math.floor(o['maxAge']) } : {}),
    };
  }
  return siteDefault;
}

const normaliseOrigin = (o: string): string => {
  try {
    const u = new URL(o);
    return u.origin.toLowerCase();
  } catch {
    return o.trim().toLowerCase();
  }
};

/** Whether `origin` (a request's `Origin` header) is allowed by `policy`. */
export function originAllowed(policy: CorsPolicy | undefined, origin: string): boolean {
  if (policy === undefined || origin === 'null') return false;
  const o = normaliseOrigin(origin);
  return policy.origins.some((p) => p === '*' || normaliseOrigin(p) === o);
}

function addVary(headers: Headers): void {
  const vary = headers.get('vary');
  if (vary === null) headers.set('vary', 'Origin');
  else if (!vary.split(',').some((v) => v.trim().toLowerCase() === 'origin')) headers.set('vary', `${vary}, Origin`);
}

/** The policy that applies to a request (typically: the service the path names). */
export type CorsPolicyFor = (req: Request) => Promise<CorsPolicy | undefined>;

/** Wrap `handler` with CORS: answers preflights, and decorates answers to allowed origins. */
export function withCors(policyFor: CorsPolicyFor, handler: Handler): Handler {
  return async (req) => {
    const origin = req.headers.get('origin');
    const preflight = req.method === 'OPTIONS' && origin !== null && req.headers.has('access-control-request-method');
    if (preflight) {
      const headers = new Headers({ vary: 'Origin' });
      const policy = await policyFor(req).catch(() => undefined);
      const method = (req.headers.get('access-control-request-method') ?? '').toUpperCase();
      if (originAllowed(policy, origin) && (CORS_METHODS as readonly string[]).includes(method)) {
        headers.set('access-control-allow-origin', origin);
        headers.set('access-control-allow-methods', CORS_METHODS.join(', '));
        headers.set('access-control-allow-headers', CORS_HEADERS.join(', '));
        headers.set('access-control-max-age', String(policy?.maxAge ?? 600));
        if (policy?.allowCredentials) headers.set('access-control-allow-credentials', 'true');
      }
      return new Response(null, { status: 204, headers });
    }
    const res = await handler(req);
    if (origin === null) return res;
    const policy = await policyFor(req).catch(() => undefined);
    const out = new Response(res.body, { status: res.status, statusText: res.statusText, headers: new Headers(res.headers) });
    addVary(out.headers);
    if (originAllowed(policy, origin)) {
      out.headers.set('access-control-allow-origin', origin);
      out.headers.set('access-control-expose-headers', CORS_EXPOSED.join(', '));
      if (policy?.allowCredentials) out.headers.set('access-control-allow-credentials', 'true');
    }
    return out;
  };
}

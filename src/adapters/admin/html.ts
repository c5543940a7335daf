/**
 * What every admin endpoint shares (protocols.md §2.0): HTTPS and method checks, the caller from an
 * admin or portal token worded in the admin shape, `f` (default html) with the admin HTML page (the
 * operation name, a form posting `f=json` with the operation's parameters, the JSON result in a
 * <pre>), and admin-shape errors for an unknown `f`.
 */
import { EngineError } from '../../core/errors.js';
import { ADMIN_AUDIENCE, authenticate, PORTAL_AUDIENCE, requireAdministrator, type Caller } from '../auth.js';
import {
  adminError,
  escapeHtml,
  parseFormat,
  readParams,
  requireHttps,
  requirePost,
  transportStatus,
  withRestErrors,
  type Handler,
  type Params,
  type Route,
} from '../rest.js';
import { fromTrustedProxy, type SiteDeps } from '../site.js';

/** The deps the admin adapters use. */
export type AdminDeps = Pick<SiteDeps, 'store' | 'keys' | 'config' | 'clock' | 'saveKeys' | 'log'>;

/** The product version the admin root reports (the same as the services directory). */
export const CURRENT_VERSION = 11.5;

/** Parameters never written back into a page. */
const SECRET = new Set(['password', 'token', 'signaturekey']);

/** One admin operation: its name (page title) and the parameters its form offers. */
export interface Operation {
  readonly name: string;
  readonly fields: readonly string[];
}

/**
 * The admin HTML page: the operation name, a form posting back to `action` with `f=json` and the
 * operation's parameters (values of the request filled in, secrets never), and the result in a <pre>.
 */
export function adminPage(op: Operation, action: string, params: Params | undefined, value: unknown): string {
  const t = escapeHtml(op.name);
  const inputs = op.fields
    .map((field) => {
      const secret = SECRET.has(field.toLowerCase());
      const v = secret ? '' : (params?.get(field) ?? '');
      const type = field.toLowerCase() === 'password' ? 'password' : 'text';
      const name = escapeHtml(field);
      return `<label>${name} <input type="${type}" name="${name}" value="${escapeHtml(v)}"></label><br>\n`;
    })
    .join('');
  const tokenInput = op.fields.some((f) => f.toLowerCase() === 'token')
    ? ''
    : '<label>token <input type="password" name="token" value=""></label><br>\n';
  const body = escapeHtml(JSON.stringify(value, null, 2) ?? 'null');
  return (
    `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${t}</title></head>\n<body>\n<h1>${t}</h1>\n` +
    `<form method="post" action="${escapeHtml(action)}" enctype="application/x-www-form-urlencoded">\n` +
    `<input type="hidden" name="f" value="json">\n${inputs}${tokenInput}<button type="submit">${t}</button>\n</form>\n` +
    `<pre>${body}</pre>\n</body>\n</html>\n`
  );
}

/** Answer `value` in the requested format; html is the admin page of `op`. Every admin answer is `no-store`. */
export function adminAnswer(req: Request, params: Params, op: Operation, value: unknown): Response {
  const format = parseFormat(params.get('f'));
  const headers = new Headers({ 'cache-control': 'no-store' });
  if (format === 'html') {
    headers.set('content-type', 'text/html; charset=utf-8');
    return new Response(adminPage(op, new URL(req.url).pathname, params, value), { headers });
  }
  headers.set('content-type', 'application/json; charset=utf-8');
  return new Response(format === 'pjson' ? JSON.stringify(value, null, 2) : JSON.stringify(value), { headers });
}

/**
 * Wraps an admin handler: anything it throws is answered in the admin shape (HTTP 200, §0.3); when
 * the caller asked for html (the default), the error is shown on the operation's page, form included.
 */
export function withAdminErrors(opOf: (req: Request) => Operation, fn: Handler): Handler {
  return withRestErrors('admin', async (req) => {
    try {
      return await fn(req);
    } catch (e) {
      let params: Params;
      try {
        params = await readParams(req);
        if (parseFormat(params.get('f')) !== 'html') throw e;
      } catch {
        throw e;
      }
      const headers = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' };
      return new Response(adminPage(opOf(req), new URL(req.url).pathname, params, adminError(e)), { status: transportStatus(e), headers });
    }
  });
}

export interface AdminRequest {
  readonly params: Params;
  readonly caller: Caller;
}

export interface GuardOptions {
  /** A configuration write: POST only (405 on anything else). */
  readonly write?: boolean;
}

/**
 * The common prelude of an admin operation, in the order that decides which error wins: `f` syntax,
 * HTTPS (403), method (405, writes only), the token (499/498, admin wording).
 */
export async function adminRequest(deps: AdminDeps, req: Request, options: GuardOptions = {}): Promise<AdminRequest> {
  const params = await readParams(req);
  parseFormat(params.get('f'));
  requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
  if (options.write) requirePost(req);
  const caller = await authenticate(deps, req, { audiences: [ADMIN_AUDIENCE, PORTAL_AUDIENCE], shape: 'admin', params });
  return { params, caller };
}

/** An INVALID_ARGUMENT whose single message is shown as is. */
export const badRequest = (message: string, path?: string): EngineError =>
  new EngineError('INVALID_ARGUMENT', message, { details: [message], ...(path ? { path } : {}) });

/** A NOT_FOUND (404) whose single message is shown as is. */
export const notFound = (message: string): EngineError => new EngineError('NOT_FOUND', message, { details: [message] });

/** A CONFLICT (409) whose single message is shown as is. */
export const conflict = (message: string): EngineError => new EngineError('CONFLICT', message, { details: [message] });

/** A required, non-blank parameter. */
export function required(params: Params, name: string): string {
  const v = params.get(name);
  if (v === undefined || v.trim() === '') throw badRequest(`'${name}' must be specified.`, name);
  return v;
}

const SUCCESS = { status: 'success' } as const;
export { SUCCESS };

const ROOT_PAGE: Operation = { name: 'Site administration', fields: [] };

/** `GET {admin_url}`: the admin root, for the default administrator. */
export function adminRootRoutes(deps: AdminDeps): Route[] {
  const root = withAdminErrors(
    () => ROOT_PAGE,
    async (req) => {
      const { params, caller } = await adminRequest(deps, req);
      requireAdministrator(caller);
      return adminAnswer(req, params, ROOT_PAGE, { resources: ['security', 'services'], currentVersion: CURRENT_VERSION });
    },
  );
  return [
    { method: 'ALL', path: '/server/admin', handler: root },
    { method: 'ALL', path: '/server/admin/', handler: root },
  ];
}

/**
 * `generateToken` (protocols.md §1, §0.1-§0.6) on three roots: the portal's sharing API
 * (`/portal/sharing/rest/generateToken`, sharing error shape, portal tokens), the server's admin API
 * (`/server/admin/generateToken`, admin error shape, admin tokens) and the standalone-server token
 * service (`/server/tokens/generateToken`, sharing shape, server tokens). Credential mode and
 * server-token mode (§1.5), the HTML form (§1.6), throttling of failed sign-ins (§6).
 */
import { isIP } from 'node:net';
import { EngineError, toEngineError } from '../../core/errors.js';
import { ADMIN_AUDIENCE, PORTAL_AUDIENCE, serverAudience, verifyPassword } from '../auth.js';
import {
  adminError,
  errorResponse,
  escapeHtml,
  parseFormat,
  readParams,
  requireHttps,
  respond,
  sharingError,
  type ErrorShape,
  type Params,
  type Route,
} from '../rest.js';
import {
  clientAddress,
  fromTrustedProxy,
  normaliseAddress,
  normaliseServerUrl,
  originOf,
  type SiteDeps,
  type UserRecord,
} from '../site.js';
import { issueToken, verifyToken, type Binding, type TokenClaims } from '../tokens.js';
import { throttleOf } from './throttle.js';

type Deps = Pick<SiteDeps, 'store' | 'keys' | 'config' | 'clock'>;

/** §1.4: every 400 of generateToken has this message (old arcgis-rest-js matches it byte for byte). */
const unable = (why: string, details: string[]): EngineError => new EngineError('INVALID_CREDENTIALS', why, { details });

export const INVALID_CREDENTIALS_DETAIL = 'Invalid username or password.';

/**
 * The credential check shared by generateToken and the OAuth sign-in page: throttle first (429 even
 * for the right password), then scrypt in constant time (unknown users take as long as wrong
 * passwords); disabled users are refused like wrong passwords. Counts the failure or clears the
 * user's count.
 */
export async function checkCredentials(deps: Deps, username: string, password: string, address: string): Promise<UserRecord> {
  const throttle = throttleOf(deps);
  throttle.check(username, address);
  const user = await deps.store.getUser(username);
  const ok = await verifyPassword(password, user?.passwordHash);
  if (!ok || !user || user.disabled) {
    throttle.fail(username, address);
    throw unable('invalid username or password', [INVALID_CREDENTIALS_DETAIL]);
  }
  throttle.succeed(username);
  return user;
}

// ---------------------------------------------------------------------------------------------
// Server roots (§1.5)

/** The federated root `serverUrl` names (this site's own `<origin>/server` included), as stored. */
export async function federatedRoot(
  deps: Pick<SiteDeps, 'store' | 'config'>,
  req: Request,
  serverUrl: string,
): Promise<string | undefined> {
  const wanted = normaliseServerUrl(serverUrl);
  if (wanted === undefined) return undefined;
  const own = `${originOf(req, deps.config)}/server`;
  // Decision: compared case-insensitively (arcgis-rest-js lower-cases only the host; federated servers are known by inconsistent case).
  const same = (root: string): boolean => (normaliseServerUrl(root) ?? root).toLowerCase() === wanted.toLowerCase();
  if (same(own)) return own;
  for (const s of await deps.store.listFederatedServers()) if (same(s.url)) return s.url;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The endpoint

export interface GenerateTokenRoot {
  readonly shape: ErrorShape;
  /** Audience of the tokens issued in credential mode, from the site's origin. */
  readonly audience: (origin: string) => string;
}

export const PORTAL_ROOT: GenerateTokenRoot = { shape: 'sharing', audience: () => PORTAL_AUDIENCE };
export const ADMIN_ROOT: GenerateTokenRoot = { shape: 'admin', audience: () => ADMIN_AUDIENCE };
export const SERVER_TOKENS_ROOT: GenerateTokenRoot = { shape: 'sharing', audience: (origin) => serverAudience(`${origin}/server`) };

export interface TokenAnswer {
  readonly token: string;
  readonly expires: number;
  readonly ssl: boolean;
}

const CREDENTIAL_PARAMS = ['username', 'password'];
const CLIENTS = ['referer', 'ip', 'requestip'] as const;

/** `GET|POST .../generateToken` on `root`. */
export function generateTokenHandler(deps: Deps, root: GenerateTokenRoot): (req: Request) => Promise<Response> {
  return async (req) => {
    let params: Params | undefined;
    try {
      params = await readParams(req);
      return await generate(deps, root, req, params);
    } catch (e) {
      const f = params?.get('f') ?? fFromQuery(req);
      if (req.method.toUpperCase() === 'POST' && (f === undefined || f === '' || f.toLowerCase() === 'html')) {
        const body = root.shape === 'sharing' ? sharingError(e) : adminError(e);
        return htmlResponse(resultPage(req, { error: body }), toEngineError(e).code === 'INTERNAL' ? 500 : 200);
      }
      return errorResponse(root.shape, e, f);
    }
  };
}

function fFromQuery(req: Request): string | undefined {
  let f: string | undefined;
  for (const [k, v] of new URL(req.url).searchParams) if (k.toLowerCase() === 'f') f = v;
  return f;
}

async function generate(deps: Deps, root: GenerateTokenRoot, req: Request, params: Params): Promise<Response> {
  const method = req.method.toUpperCase();
  const inQuery = (name: string): boolean => params.entries.some((e) => e.source === 'query' && e.name.toLowerCase() === name);
  // §1.3 step 1: method and query-string credentials.
  if (method === 'GET' || method === 'HEAD') {
    const f = params.get('f');
    const htmlForm = f === undefined || f === '' || f.toLowerCase() === 'html';
    if (!htmlForm || CREDENTIAL_PARAMS.some((n) => params.has(n)) || params.has('token')) {
      throw new EngineError('METHOD_NOT_ALLOWED', 'generateToken takes credentials only in a POST body', { issues: [] });
    }
    requireHttps(req, { allSSL: true, trustProxy: fromTrustedProxy(req, deps.config) });
    return htmlResponse(formPage(req, params), 200);
  }
  if (method !== 'POST') throw new EngineError('METHOD_NOT_ALLOWED', `${req.method} is not supported here; use POST`, { issues: [] });
  if (CREDENTIAL_PARAMS.some(inQuery)) throw unable('credentials in the query string', ['Credentials must be sent in the request body.']);
  // Step 2: HTTPS, always.
  requireHttps(req, { allSSL: true, trustProxy: fromTrustedProxy(req, deps.config) });
  // Decision: an unknown `f` is refused before the credentials are checked (no token is issued and thrown away).
  parseFormat(params.get('f'));
  // Step 3: mode.
  const portalToken = params.get('token');
  const answer =
    portalToken !== undefined && portalToken !== ''
      ? await serverToken(deps, req, params, portalToken)
      : await credentialToken(deps, root, req, params);
  const f = params.get('f');
  if (f === undefined || f === '' || f.toLowerCase() === 'html') return htmlResponse(resultPage(req, { answer }), 200);
  return respond(f, answer, { noStore: true });
}

async function credentialToken(deps: Deps, root: GenerateTokenRoot, req: Request, params: Params): Promise<TokenAnswer> {
  const value = (n: string): string | undefined => {
    const v = params.get(n);
    return v === undefined || v.trim() === '' ? undefined : v;
  };
  const clientParam = value('client')?.trim();
  const client = clientParam === undefined ? 'referer' : CLIENTS.find((c) => c === clientParam.toLowerCase());
  // Step 4: every missing parameter, in order.
  const missing: string[] = [];
  const username = params.get('username');
  const password = params.get('password');
  if (username === undefined || username === '') missing.push('username');
  if (password === undefined || password === '') missing.push('password');
  if (client === 'referer' && value('referer') === undefined) missing.push('referer');
  if (client === 'ip' && value('ip') === undefined) missing.push('ip');
  if (missing.length > 0) {
    throw unable(
      `missing ${missing.join(', ')}`,
      missing.map((n) => `'${n}' must be specified.`),
    );
  }
  // Step 5: client, ip, expiration.
  if (client === undefined) throw unable('bad client', [`'client' must be one of referer, ip, requestip.`]);
  let binding: Binding;
  if (client === 'referer') binding = { kind: 'referer', value: value('referer')!.trim() };
  else if (client === 'ip') {
    const ip = value('ip')!.trim();
    if (isIP(ip) === 0) throw unable('bad ip', [`'ip' must be an IPv4 or IPv6 address.`]);
    binding = { kind: 'ip', value: normaliseAddress(ip) };
  } else binding = { kind: 'requestip', value: clientAddress(req, deps.config) };
  const minutes = expirationMinutes(deps, params.get('expiration'));
  // Step 6: credentials (throttled).
  const user = await checkCredentials(deps, username!, password!, clientAddress(req, deps.config));
  // Step 7: the token.
  const expires = deps.clock.now() + minutes * 60_000;
  const token = await issueToken(deps.keys, {
    subject: user.username,
    audience: root.audience(originOf(req, deps.config)),
    binding,
    expiresAt: expires,
    ssl: deps.config.allSSL,
  });
  return { token, expires, ssl: deps.config.allSSL };
}

/** `expiration` in minutes: absent -> the default; 1 to the configured maximum (§1.2). */
function expirationMinutes(deps: Deps, raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return deps.config.defaultTokenMinutes;
  const t = raw.trim();
  if (!/^\d+$/.test(t) || Number(t) < 1) throw unable('bad expiration', [`'expiration' must be a positive integer number of minutes.`]);
  const n = Number(t);
  const max = deps.config.maxTokenMinutes;
  if (n > max) {
    throw new EngineError('EXPIRATION_TOO_LONG', 'expiration above the maximum', {
      details: [`'expiration' must not exceed ${max} minutes.`],
    });
  }
  return n;
}

/** §1.5: a token for a federated server from a portal token; same subject, binding and expiry. */
async function serverToken(deps: Deps, req: Request, params: Params, portalToken: string): Promise<TokenAnswer> {
  let claims: TokenClaims;
  try {
    claims = await verifyToken(deps.keys, portalToken, {
      audience: PORTAL_AUDIENCE,
      request: { referer: req.headers.get('referer') ?? undefined, ip: clientAddress(req, deps.config) },
    });
  } catch (e) {
    throw new EngineError('TOKEN_INVALID', 'the portal token is not valid', { issues: [], cause: e });
  }
  const user = await deps.store.getUser(claims.sub);
  if (!user || user.disabled) throw new EngineError('TOKEN_INVALID', 'the portal token is not valid', { issues: [] });
  const serverUrl = params.get('serverUrl');
  if (serverUrl === undefined || serverUrl.trim() === '') throw unable('missing serverUrl', [`'serverUrl' must be specified.`]);
  const root = await federatedRoot(deps, req, serverUrl);
  if (root === undefined) {
    throw new EngineError('SERVER_NOT_REGISTERED', 'serverUrl is not federated', {
      details: [`'serverUrl' is not a server federated with this portal.`],
    });
  }
  // `expiration` is ignored here (§1.5): the server token ends with the portal token.
  const token = await issueToken(deps.keys, {
    subject: claims.sub,
    audience: serverAudience(root),
    binding: { kind: claims.bind.t, value: claims.bind.v },
    expiresAt: claims.exp,
    ssl: deps.config.allSSL,
  });
  return { token, expires: claims.exp, ssl: deps.config.allSSL };
}

// ---------------------------------------------------------------------------------------------
// HTML (§1.6)

function htmlResponse(html: string, status: number): Response {
  return new Response(html, {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
    },
  });
}

function page(title: string, body: string): string {
  return (
    `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n` +
    `<body>\n<h1>${escapeHtml(title)}</h1>\n${body}</body>\n</html>\n`
  );
}

function option(value: string, label: string, selected: string): string {
  return `<option value="${escapeHtml(value)}"${value === selected ? ' selected' : ''}>${escapeHtml(label)}</option>`;
}

/** The sign-in form; it posts back to this URL. Only non-secret values are prefilled (escaped). */
function formPage(req: Request, params: Params): string {
  const action = escapeHtml(new URL(req.url).pathname);
  const v = (n: string, d = ''): string => escapeHtml(params.get(n) ?? d);
  const client = (params.get('client') ?? 'referer').toLowerCase();
  const f = (params.get('f') ?? 'html').toLowerCase();
  return page(
    'Generate Token',
    `<form method="post" action="${action}" enctype="application/x-www-form-urlencoded">\n` +
      `<p><label>User name <input type="text" name="username" autocomplete="username"></label></p>\n` +
      `<p><label>Password <input type="password" name="password" autocomplete="current-password"></label></p>\n` +
      `<p><label>Client <select name="client">` +
      option('referer', 'HTTP Referer', client) +
      option('ip', 'IP Address', client) +
      option('requestip', "IP address of this request's origin", client) +
      `</select></label></p>\n` +
      `<p><label>HTTP Referer <input type="text" name="referer" value="${v('referer')}"></label></p>\n` +
      `<p><label>IP Address <input type="text" name="ip" value="${v('ip')}"></label></p>\n` +
      `<p><label>Expiration (minutes) <input type="text" name="expiration" value="${v('expiration', '60')}"></label></p>\n` +
      `<p><label>Format <select name="f">${option('html', 'HTML', f)}${option('json', 'JSON', f)}${option('pjson', 'Pretty JSON', f)}</select></label></p>\n` +
      `<p><input type="submit" value="Generate Token"></p>\n</form>\n`,
  );
}

/** The answer of a POST with f=html: the token and its expiry (UTC), or the error. */
function resultPage(
  req: Request,
  r: { answer?: TokenAnswer; error?: ReturnType<typeof sharingError> | ReturnType<typeof adminError> },
): string {
  const back = `<p><a href="${escapeHtml(new URL(req.url).pathname)}">Generate another token</a></p>\n`;
  if (r.answer) {
    return page(
      'Generate Token',
      `<p>Token: <code id="token">${escapeHtml(r.answer.token)}</code></p>\n` +
        `<p>Expires: <span id="expires">${escapeHtml(new Date(r.answer.expires).toUTCString())}</span></p>\n` +
        back,
    );
  }
  const e = r.error!;
  const [message, details] = 'error' in e ? [e.error.message, e.error.details] : [`Error ${e.code}`, e.messages];
  const list = details.map((d) => `<li>${escapeHtml(d)}</li>`).join('');
  return page('Generate Token', `<p id="error">${escapeHtml(message)}</p>\n${list ? `<ul>${list}</ul>\n` : ''}${back}`);
}

// ---------------------------------------------------------------------------------------------
// Routes

/** generateToken on the portal, the server admin API and the server token service. */
export function sharingRoutes(deps: Deps): Route[] {
  return [
    { method: 'ALL', path: '/portal/sharing/rest/generateToken', handler: generateTokenHandler(deps, PORTAL_ROOT) },
    { method: 'ALL', path: '/server/admin/generateToken', handler: generateTokenHandler(deps, ADMIN_ROOT) },
    { method: 'ALL', path: '/server/tokens/generateToken', handler: generateTokenHandler(deps, SERVER_TOKENS_ROOT) },
  ];
}

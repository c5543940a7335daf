/**
 * OAuth 2.0 on the portal (seed Authentication 4): the authorization-code flow with PKCE
 * (`oauth2/authorize` sign-in page, `oauth2/token`), refresh tokens, client credentials, and
 * `oauth2/revokeToken`. The sign-in page sets the `geo_authcookie` cookie (a portal token) so that a
 * later authorization skips the form. Answers and errors follow what arcgis-rest-js 4.10 parses
 * (`fetchToken`, `exchangeAuthorizationCode`, `refreshWithRefreshToken`, `exchangeRefreshToken`,
 * `revokeToken`, `completeOAuth2`).
 *
 * Decisions:
 * - PKCE is optional at `authorize` (arcgis-rest-js's server-side `authorize()` sends no challenge and
 *   `exchangeAuthorizationCode()` no verifier, as the vendor allows); a code issued with a challenge
 *   can only be exchanged with the matching `code_verifier`. Every app is registered with a secret;
 *   when a client sends `client_secret` it must be right.
 * - `refresh_token` grant: a new access token; the refresh token stays valid (arcgis-rest-js's
 *   `refreshWithRefreshToken` keeps using it). `exchange_refresh_token` grant: rotation, the old
 *   refresh token is consumed and a new one answered. Refresh tokens live `oauthTokenMinutes` (two weeks).
 * - `client_credentials`: the token's subject is the app's owner (the administrator who registered it);
 *   no refresh token.
 * - Access tokens: portal audience, not bound to a client (binding `none`), lifetime
 *   `oauthTokenMinutes`, `expiration` (minutes) may shorten it.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { authenticate, PORTAL_AUDIENCE, verifyPassword } from '../auth.js';
import { errorResponse, escapeHtml, readParams, requireHttps, respond, type Params, type Route } from '../rest.js';
import { clientAddress, fromTrustedProxy, originOf, type OAuthAppRecord, type OAuthGrantRecord, type SiteDeps } from '../site.js';
import { AUTH_COOKIE, issueToken, revokeTokenId, verifyToken } from '../tokens.js';
import { EngineError } from '../../core/errors.js';
import { checkCredentials } from './generate-token.js';

type Deps = Pick<SiteDeps, 'store' | 'keys' | 'config' | 'clock' | 'saveKeys'>;

const BASE = '/portal/sharing/rest/oauth2';
/** Authorization codes are single-use and live ten minutes. */
export const CODE_TTL_MS = 10 * 60_000;
/** The hidden CSRF field and its cookie (double submit). */
const CSRF_COOKIE = 'geo_oauth_csrf';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('base64url');
const random = (bytes = 32): string => randomBytes(bytes).toString('base64url');

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function cookie(req: Request, name: string): string | undefined {
  const header = req.headers.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim() || undefined;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Errors in the vendor's OAuth shape

/** An OAuth error: `{"error":{"code":400,"error":"invalid_request","error_description","message","details":[]}}`. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

function oauthErrorResponse(e: OAuthError, f: string | undefined): Response {
  const body = { error: { code: 400, error: e.error, error_description: e.description, message: e.description, details: [] } };
  return respond(f === undefined || f === '' ? 'json' : f, body, { noStore: true });
}

/** Runs an OAuth JSON endpoint: OAuth errors in their shape, other EngineErrors in the sharing shape. */
function oauthEndpoint(deps: Deps, fn: (req: Request, params: Params) => Promise<Response>): (req: Request) => Promise<Response> {
  return async (req) => {
    let params: Params | undefined;
    try {
      params = await readParams(req);
      requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
      if (req.method.toUpperCase() !== 'POST') throw new EngineError('METHOD_NOT_ALLOWED', 'use POST', { issues: [] });
      return await fn(req, params);
    } catch (e) {
      const f = params?.get('f');
      if (e instanceof OAuthError) return oauthErrorResponse(e, f);
      return errorResponse('sharing', e, f === undefined || f === '' ? 'json' : f);
    }
  };
}

const invalidRequest = (d: string) => new OAuthError('invalid_request', d);
const invalidClient = (d = 'Invalid client_id') => new OAuthError('invalid_client', d);
const invalidGrant = (d: string) => new OAuthError('invalid_grant', d);

// ---------------------------------------------------------------------------------------------
// authorize

interface AuthorizeRequest {
  readonly app: OAuthAppRecord;
  readonly redirectUri: string;
  readonly state?: string;
  readonly codeChallenge?: string;
  readonly codeChallengeMethod?: 'S256' | 'plain';
}

/** A problem shown on our own page (the client or redirect URI is not trusted, so never a redirect). */
class PageError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

const PKCE_CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * Validates an authorization request. Untrusted client or redirect URI -> PageError; anything else
 * wrong -> an OAuthError that is sent back to the (trusted) redirect URI.
 */
async function authorizeRequest(
  deps: Deps,
  params: Params,
): Promise<{ ok?: AuthorizeRequest; redirectError?: [AuthorizeRequest, OAuthError] }> {
  const clientId = params.get('client_id');
  if (!clientId) throw new PageError(400, "'client_id' must be specified.");
  const app = await deps.store.getOAuthApp(clientId);
  if (!app) throw new PageError(400, 'Invalid client_id.');
  const redirectUri = params.get('redirect_uri');
  if (!redirectUri) throw new PageError(400, "'redirect_uri' must be specified.");
  // Exact string match with a registered URI (no prefix, no normalisation).
  if (!app.redirectUris.includes(redirectUri)) throw new PageError(400, 'Invalid redirect_uri.');
  const state = params.get('state');
  const base: AuthorizeRequest = { app, redirectUri, ...(state !== undefined ? { state } : {}) };
  const responseType = params.get('response_type');
  if (responseType !== 'code') {
    return { redirectError: [base, new OAuthError('unsupported_response_type', "'response_type' must be code.")] };
  }
  const challenge = params.get('code_challenge');
  const methodRaw = params.get('code_challenge_method');
  if (challenge === undefined || challenge === '') {
    if (methodRaw) return { redirectError: [base, invalidRequest("'code_challenge_method' needs a 'code_challenge'.")] };
    return { ok: base };
  }
  const method = methodRaw === undefined || methodRaw === '' ? 'plain' : methodRaw;
  if (method !== 'S256' && method !== 'plain')
    return { redirectError: [base, invalidRequest("'code_challenge_method' must be S256 or plain.")] };
  if (!PKCE_CHALLENGE.test(challenge)) return { redirectError: [base, invalidRequest("'code_challenge' is not a valid PKCE challenge.")] };
  return { ok: { ...base, codeChallenge: challenge, codeChallengeMethod: method } };
}

function redirectTo(uri: string, query: Record<string, string | undefined>, extraHeaders: [string, string][] = []): Response {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, v);
  const headers = new Headers({ location: u.toString(), 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
  for (const [k, v] of extraHeaders) headers.append(k, v);
  return new Response(null, { status: 302, headers });
}

function htmlResponse(html: string, status: number, extraHeaders: [string, string][] = []): Response {
  const headers = new Headers({
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    // No form-action: browsers apply it to the redirect that follows the sign-in post (to the app's redirect URI).
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  });
  for (const [k, v] of extraHeaders) headers.append(k, v);
  return new Response(html, { status, headers });
}

function page(title: string, body: string): string {
  return (
    `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n` +
    `<body>\n<h1>${escapeHtml(title)}</h1>\n${body}</body>\n</html>\n`
  );
}

const errorPage = (status: number, detail: string): Response =>
  htmlResponse(page('Sign in', `<p id="error">${escapeHtml(detail)}</p>\n`), status);

const HIDDEN = ['client_id', 'redirect_uri', 'response_type', 'state', 'code_challenge', 'code_challenge_method', 'expiration'];

function signInPage(deps: Deps, params: Params, app: OAuthAppRecord, message?: string): Response {
  const csrf = random(24);
  const hidden = HIDDEN.filter((n) => params.get(n) !== undefined)
    .map((n) => `<input type="hidden" name="${n}" value="${escapeHtml(params.get(n)!)}">`)
    .join('\n');
  const username = params.get('username') ?? '';
  const html = page(
    `Sign in to ${deps.config.orgName}`,
    `<p>${escapeHtml(app.name)} would like to access your account.</p>\n` +
      (message ? `<p id="error" role="alert">${escapeHtml(message)}</p>\n` : '') +
      `<form method="post" action="${BASE}/authorize" enctype="application/x-www-form-urlencoded">\n${hidden}\n` +
      `<input type="hidden" name="csrf_token" value="${csrf}">\n` +
      `<p><label>Username <input type="text" name="username" autocomplete="username" value="${escapeHtml(username)}" required></label></p>\n` +
      `<p><label>Password <input type="password" name="password" autocomplete="current-password" required></label></p>\n` +
      `<p><label><input type="checkbox" name="persist" value="true"> Keep me signed in</label></p>\n` +
      `<p><input type="submit" value="Sign In"></p>\n</form>\n`,
  );
  return htmlResponse(html, 200, [['set-cookie', `${CSRF_COOKIE}=${csrf}; HttpOnly; Secure; SameSite=Strict; Path=${BASE}`]]);
}

/** The authenticated user of the sign-in cookie, if valid. */
async function cookieUser(deps: Deps, req: Request): Promise<string | undefined> {
  const token = cookie(req, AUTH_COOKIE);
  if (!token) return undefined;
  try {
    const claims = await verifyToken(deps.keys, token, {
      audience: PORTAL_AUDIENCE,
      request: { referer: req.headers.get('referer') ?? undefined, ip: clientAddress(req, deps.config) },
    });
    const user = await deps.store.getUser(claims.sub);
    return user && !user.disabled ? user.username : undefined;
  } catch {
    return undefined;
  }
}

async function issueCode(deps: Deps, ar: AuthorizeRequest, username: string, extraHeaders: [string, string][] = []): Promise<Response> {
  const code = random();
  const grant: OAuthGrantRecord = {
    id: sha256(code),
    kind: 'code',
    clientId: ar.app.clientId,
    username,
    expires: deps.clock.now() + CODE_TTL_MS,
    redirectUri: ar.redirectUri,
    ...(ar.codeChallenge ? { codeChallenge: ar.codeChallenge, codeChallengeMethod: ar.codeChallengeMethod! } : {}),
  };
  await deps.store.putGrant(grant);
  return redirectTo(ar.redirectUri, { code, state: ar.state }, extraHeaders);
}

function sameOrigin(req: Request, deps: Deps): boolean {
  const site = originOf(req, deps.config).toLowerCase();
  const origin = req.headers.get('origin');
  if (origin !== null) return origin.toLowerCase() === site;
  const referer = req.headers.get('referer');
  return referer !== null && URL.canParse(referer) && new URL(referer).origin.toLowerCase() === site;
}

/** `GET|POST /portal/sharing/rest/oauth2/authorize`. */
export const authorize = (deps: Deps) => async (req: Request) => {
  let params: Params;
  try {
    params = await readParams(req);
    requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
  } catch (e) {
    const detail = e instanceof EngineError && e.code === 'HTTPS_REQUIRED' ? 'SSL Required' : 'The request is not valid.';
    return errorPage(e instanceof EngineError && e.code === 'HTTPS_REQUIRED' ? 403 : 400, detail);
  }
  const method = req.method.toUpperCase();
  if (method !== 'GET' && method !== 'POST' && method !== 'HEAD') return errorPage(405, 'Method not supported.');
  let checked: Awaited<ReturnType<typeof authorizeRequest>>;
  try {
    checked = await authorizeRequest(deps, params);
  } catch (e) {
    if (e instanceof PageError) return errorPage(e.status, e.detail);
    throw e;
  }
  if (checked.redirectError) {
    const [ar, err] = checked.redirectError;
    return redirectTo(ar.redirectUri, { error: err.error, error_description: err.description, state: ar.state });
  }
  const ar = checked.ok!;
  if (method !== 'POST') {
    // Only a GET issues a code from the cookie (HEAD must not have side effects).
    const user = method === 'GET' ? await cookieUser(deps, req) : undefined;
    if (user !== undefined) return issueCode(deps, ar, user);
    return signInPage(deps, params, ar.app);
  }
  // A POSTed authorization request that is not our form (no credentials, no CSRF field): show the form.
  if (!params.has('csrf_token') && !params.has('username') && !params.has('password')) return signInPage(deps, params, ar.app);
  // POST: the sign-in form. CSRF: double-submit token and the site's own origin.
  const sent = params.get('csrf_token') ?? '';
  const expected = cookie(req, CSRF_COOKIE) ?? '';
  if (!sent || !expected || !safeEqual(sent, expected) || !sameOrigin(req, deps)) {
    return signInPage(deps, params, ar.app, 'Your sign-in session has expired. Please sign in again.');
  }
  const username = params.get('username') ?? '';
  const password = params.get('password') ?? '';
  if (!username || !password) return signInPage(deps, params, ar.app, 'Enter your username and password.');
  try {
    await checkCredentials(deps, username, password, clientAddress(req, deps.config));
  } catch (e) {
    const d = e instanceof EngineError ? (e.details[0] ?? 'Invalid username or password.') : 'Invalid username or password.';
    return signInPage(deps, params, ar.app, d);
  }
  const persist = (params.get('persist') ?? '').toLowerCase();
  const keep = persist === 'true' || persist === 'on';
  // Decision: a session cookie's token lives defaultTokenMinutes; "Keep me signed in" makes it oauthTokenMinutes (two weeks).
  const minutes = keep ? deps.config.oauthTokenMinutes : deps.config.defaultTokenMinutes;
  const { access_token: token } = await accessToken(deps, username, minutes);
  const set = `${AUTH_COOKIE}=${token}; HttpOnly; Secure; SameSite=Lax; Path=/${keep ? `; Max-Age=${minutes * 60}` : ''}`;
  const clearCsrf = `${CSRF_COOKIE}=; HttpOnly; Secure; SameSite=Strict; Path=${BASE}; Max-Age=0`;
  return issueCode(deps, ar, username, [
    ['set-cookie', set],
    ['set-cookie', clearCsrf],
  ]);
};

// ---------------------------------------------------------------------------------------------
// token

async function clientOf(deps: Deps, params: Params, secretRequired: boolean): Promise<OAuthAppRecord> {
  const clientId = params.get('client_id');
  if (!clientId) throw invalidRequest("'client_id' must be specified.");
  const app = await deps.store.getOAuthApp(clientId);
  const secret = params.get('client_secret');
  if (secretRequired && (secret === undefined || secret === '')) throw invalidRequest("'client_secret' must be specified.");
  if (secret !== undefined && secret !== '') {
    if (!(await verifyPassword(secret, app?.secretHash)) || !app) throw invalidClient('Invalid client_id or client_secret.');
  }
  if (!app) throw invalidClient();
  return app;
}

function accessMinutes(deps: Deps, params: Params): number {
  const raw = params.get('expiration');
  const max = deps.config.oauthTokenMinutes;
  if (raw === undefined || raw.trim() === '') return max;
  if (!/^\d+$/.test(raw.trim()) || Number(raw.trim()) < 1)
    throw invalidRequest("'expiration' must be a positive integer number of minutes.");
  return Math.min(Number(raw.trim()), max);
}

/** A portal token for `username`, unbound (OAuth tokens and the sign-in cookie carry no referer binding). */
async function accessToken(deps: Deps, username: string, minutes: number): Promise<{ access_token: string; expires_in: number }> {
  const token = await issueToken(deps.keys, {
    subject: username,
    audience: PORTAL_AUDIENCE,
    binding: { kind: 'none', value: '' },
    expiresAt: deps.clock.now() + minutes * 60_000,
    ssl: deps.config.allSSL,
  });
  return { access_token: token, expires_in: minutes * 60 };
}

async function newRefreshToken(
  deps: Deps,
  clientId: string,
  username: string,
): Promise<{ refresh_token: string; refresh_token_expires_in: number }> {
  const refresh = random();
  const seconds = deps.config.oauthTokenMinutes * 60;
  await deps.store.putGrant({ id: sha256(refresh), kind: 'refresh', clientId, username, expires: deps.clock.now() + seconds * 1000 });
  return { refresh_token: refresh, refresh_token_expires_in: seconds };
}

async function enabledUser(deps: Deps, username: string): Promise<boolean> {
  const u = await deps.store.getUser(username);
  return u !== undefined && !u.disabled;
}

function verifierMatches(grant: OAuthGrantRecord, verifier: string | undefined): boolean {
  if (!grant.codeChallenge) return true;
  if (verifier === undefined || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  const derived = grant.codeChallengeMethod === 'S256' ? sha256(verifier) : verifier;
  return safeEqual(derived, grant.codeChallenge);
}

/** `POST /portal/sharing/rest/oauth2/token`. */
export const token = (deps: Deps) =>
  oauthEndpoint(deps, async (_req, params) => {
    const grantType = params.get('grant_type');
    if (!grantType) throw invalidRequest("'grant_type' must be specified.");
    const f = params.get('f') || 'json';
    const answer = (value: Record<string, unknown>) => respond(f, { ...value, ssl: deps.config.allSSL }, { noStore: true });
    if (grantType === 'client_credentials') {
      const app = await clientOf(deps, params, true);
      if (!(await enabledUser(deps, app.owner))) throw invalidClient('The owner of this app cannot sign in.');
      return answer({ ...(await accessToken(deps, app.owner, accessMinutes(deps, params))), username: app.owner });
    }
    if (grantType === 'authorization_code') {
      const app = await clientOf(deps, params, false);
      const code = params.get('code');
      if (!code) throw invalidRequest("'code' must be specified.");
      const redirectUri = params.get('redirect_uri');
      if (!redirectUri) throw invalidRequest("'redirect_uri' must be specified.");
      const minutes = accessMinutes(deps, params);
      const grant = await deps.store.takeGrant(sha256(code)); // consumed whatever happens next
      if (!grant || grant.kind !== 'code' || grant.clientId !== app.clientId || grant.expires <= deps.clock.now()) {
        throw invalidGrant('Invalid authorization code.');
      }
      if (grant.redirectUri !== redirectUri) throw invalidGrant('Invalid redirect_uri.');
      if (!verifierMatches(grant, params.get('code_verifier'))) throw invalidGrant('Invalid code_verifier.');
      if (!(await enabledUser(deps, grant.username))) throw invalidGrant('Invalid authorization code.');
      return answer({
        ...(await accessToken(deps, grant.username, minutes)),
        username: grant.username,
        ...(await newRefreshToken(deps, app.clientId, grant.username)),
      });
    }
    if (grantType === 'refresh_token' || grantType === 'exchange_refresh_token') {
      const app = await clientOf(deps, params, false);
      const refresh = params.get('refresh_token');
      if (!refresh) throw invalidRequest("'refresh_token' must be specified.");
      const minutes = accessMinutes(deps, params);
      const grant = await deps.store.takeGrant(sha256(refresh));
      if (grant && grant.clientId !== app.clientId) await deps.store.putGrant(grant); // not this client's: leave it alone
      if (!grant || grant.kind !== 'refresh' || grant.clientId !== app.clientId || grant.expires <= deps.clock.now()) {
        throw invalidGrant('Invalid refresh_token.');
      }
      if (!(await enabledUser(deps, grant.username))) throw invalidGrant('Invalid refresh_token.');
      const access = await accessToken(deps, grant.username, minutes);
      if (grantType === 'refresh_token') {
        await deps.store.putGrant(grant);
        return answer({ ...access, username: grant.username });
      }
      return answer({ ...access, username: grant.username, ...(await newRefreshToken(deps, app.clientId, grant.username)) });
    }
    throw new OAuthError(
      'unsupported_grant_type',
      "'grant_type' must be authorization_code, refresh_token, exchange_refresh_token or client_credentials.",
    );
  });

/** `POST /portal/sharing/rest/oauth2/revokeToken`: a refresh token (its grant) or an access token (by id). */
export const revoke = (deps: Deps) =>
  oauthEndpoint(deps, async (req, params) => {
    const app = await clientOf(deps, params, false);
    // arcgis-rest-js sends `auth_token`; the vendor's documentation says `token`.
    const value = params.get('auth_token') || params.get('token');
    if (!value) throw invalidRequest("'token' must be specified.");
    const hint = params.get('token_type_hint');
    if (hint !== undefined && hint !== '' && hint !== 'access_token' && hint !== 'refresh_token') {
      throw new OAuthError('unsupported_token_type', "'token_type_hint' must be access_token or refresh_token.");
    }
    let revoked = false;
    if (hint !== 'access_token') {
      const grant = await deps.store.takeGrant(sha256(value));
      if (grant && (grant.kind !== 'refresh' || grant.clientId !== app.clientId)) await deps.store.putGrant(grant);
      else if (grant) revoked = true;
    }
    if (!revoked && hint !== 'refresh_token') {
      try {
        const claims = await verifyToken(deps.keys, value, {
          audience: PORTAL_AUDIENCE,
          request: { referer: req.headers.get('referer') ?? undefined, ip: clientAddress(req, deps.config) },
        });
        revokeTokenId(deps.keys, claims.jti, claims.exp);
        await deps.saveKeys();
      } catch {
        // Decision (RFC 7009 §2.2): an unknown, expired or foreign token is answered with success too.
      }
    }
    return respond(params.get('f') || 'json', { success: true }, { noStore: true });
  });

/**
 * `POST /portal/sharing/rest/oauth2/validateAppAccess` (arcgis-rest-js `validateAppAccess`): whether
 * the signed-in user (`token`) may use the app `client_id`. Decision: every enabled user may use
 * every registered app (no per-app licensing), so a valid token and a known app answer valid.
 */
export const validateAppAccess = (deps: Deps) =>
  oauthEndpoint(deps, async (req, params) => {
    await authenticate(deps, req, { audiences: [PORTAL_AUDIENCE], shape: 'sharing', params });
    await clientOf(deps, params, false);
    return respond(params.get('f') || 'json', { valid: true, viewOnlyUserTypeApp: false }, { noStore: true });
  });

export function oauthRoutes(deps: Deps): Route[] {
  const a = authorize(deps);
  const t = token(deps);
  const r = revoke(deps);
  const v = validateAppAccess(deps);
  // arcgis-rest-js calls `oauth2/token/` and `oauth2/revokeToken/` with a trailing slash.
  return [
    { method: 'ALL', path: `${BASE}/authorize`, handler: a },
    { method: 'ALL', path: `${BASE}/authorize/`, handler: a },
    { method: 'ALL', path: `${BASE}/token`, handler: t },
    { method: 'ALL', path: `${BASE}/token/`, handler: t },
    { method: 'ALL', path: `${BASE}/revokeToken`, handler: r },
    { method: 'ALL', path: `${BASE}/revokeToken/`, handler: r },
    { method: 'ALL', path: `${BASE}/validateAppAccess`, handler: v },
  ];
}

/**
 * Who is calling (issue 17, protocols.md §0.3-§0.5, §6): password hashing (scrypt), reading and
 * checking the token of a request against the endpoint's audiences and the client binding, and the
 * capability checks of the admin API. Errors carry the wording of the shape they will be shown in:
 * sharing 499/498 bodies have the vendor's short details, admin bodies the vendor's admin sentences.
 */
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { EngineError } from '../core/errors.js';
import type { ErrorShape, Params } from './rest.js';
import { clientAddress, originOf, type Privilege, type SiteDeps, type UserRecord, type UserRole } from './site.js';
import { tokenFromRequest, verifyToken, type TokenClaims } from './tokens.js';

// ---------------------------------------------------------------------------------------------
// Passwords

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 } as const;

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> =>
  new Promise((resolve, reject) => scryptCb(password, salt, keylen, options, (e, key) => (e ? reject(e) : resolve(key))));

/** `scrypt$N$r$p$salt$hash`, salt and hash base64url. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p });
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A hash of nothing anyone knows, checked for unknown users so that they take as long as wrong passwords. */
let decoy: Promise<string> | undefined;

/**
 * Whether `password` matches `hash` (constant-time comparison). `hash` undefined (unknown user) still
 * runs scrypt once, so the answer takes the same time (generateToken §1.3 step 6).
 */
export async function verifyPassword(password: string, hash: string | undefined): Promise<boolean> {
  const h = hash ?? (await (decoy ??= hashPassword(randomBytes(16).toString('hex'))));
  const parts = h.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const expected = Buffer.from(parts[5]!, 'base64url');
  const got = await scrypt(password, Buffer.from(parts[4]!, 'base64url'), expected.length, { N, r, p, maxmem: 256 * N * r });
  return timingSafeEqual(got, expected) && hash !== undefined;
}

// ---------------------------------------------------------------------------------------------
// Callers

/** Audiences of the three roots (§1.7). A server root's audience is `server:<root>`. */
export const PORTAL_AUDIENCE = 'portal';
export const ADMIN_AUDIENCE = 'admin';
export const serverAudience = (root: string): string => `server:${root}`;

/** An authenticated caller. */
export interface Caller {
  readonly username: string;
  readonly role: UserRole;
  /** Privileges from the user's custom roles (administrators hold every one implicitly). */
  readonly privileges: ReadonlySet<Privilege>;
  readonly claims: TokenClaims;
  readonly user: UserRecord;
}

export const isAdministrator = (c: Caller): boolean => c.role === 'administrator';

/** FORBIDDEN (403) in either shape; the table's message is the vendor's sentence. */
export const forbidden = (why: string): EngineError => new EngineError('FORBIDDEN', why, { issues: [] });

/** Throws FORBIDDEN unless the caller has the default administrator role. */
export function requireAdministrator(c: Caller): void {
  if (!isAdministrator(c)) throw forbidden(`${c.username} is not an administrator`);
}

export interface AuthenticateOptions {
  /** Token audiences this endpoint accepts (e.g. admin endpoints take admin and portal tokens). */
  readonly audiences: readonly string[];
  /** Wording of the errors (§0.3). */
  readonly shape: ErrorShape;
  /** The request's parameters, for a body `token` (§0.4 item 4). */
  readonly params?: Params;
}

const ADMIN_WORDING = {
  required: "Unauthorized access. Token not found. You can generate a token using the 'generateToken' operation.",
  expired: 'Token Expired.',
  invalid: 'Could not decrypt token. Token may not be valid.',
  binding: 'Invalid token, ClientID does not match.',
} as const;

function authError(
  code: 'TOKEN_REQUIRED' | 'TOKEN_INVALID' | 'TOKEN_EXPIRED',
  why: keyof typeof ADMIN_WORDING,
  shape: ErrorShape,
  cause?: unknown,
) {
  // Sharing shape (§0.3): 499 details ["Token Required"]; 498 details [] (blank, as the vendor sends).
  const details = shape === 'admin' ? [ADMIN_WORDING[why]] : code === 'TOKEN_REQUIRED' ? ['Token Required'] : [];
  return new EngineError(code, `${why === 'required' ? 'a token is required' : `token ${why}`}`, { details, issues: [], cause });
}

/**
 * The caller of `req`: its token from any carrier (§0.4), verified against `audiences`, the client
 * binding (§0.5) and the user's current state (deleted or disabled users' tokens stop working).
 * Throws TOKEN_REQUIRED (499), TOKEN_EXPIRED / TOKEN_INVALID (498) worded for `shape`.
 */
export async function authenticate(
  deps: Pick<SiteDeps, 'store' | 'keys' | 'config'>,
  req: Request,
  options: AuthenticateOptions,
): Promise<Caller> {
  const { shape } = options;
  let token: string | undefined;
  try {
    token = tokenFromRequest(req, { headerAlias: deps.config.headerAlias, ...(options.params ? { params: options.params } : {}) });
  } catch (e) {
    throw authError('TOKEN_INVALID', 'invalid', shape, e);
  }
  if (token === undefined) throw authError('TOKEN_REQUIRED', 'required', shape);
  if (fromCookieOnly(req, deps, options)) assertSameOrigin(req, deps);
  let claims: TokenClaims;
  try {
    claims = await verifyToken(deps.keys, token, {
      audience: options.audiences,
      request: { referer: req.headers.get('referer') ?? undefined, ip: clientAddress(req, deps.config) },
    });
  } catch (e) {
    if (e instanceof EngineError && e.code === 'TOKEN_EXPIRED') throw authError('TOKEN_EXPIRED', 'expired', shape, e);
    const binding = e instanceof EngineError && e.message.includes('ClientID');
    throw authError('TOKEN_INVALID', binding ? 'binding' : 'invalid', shape, e);
  }
  const user = await deps.store.getUser(claims.sub);
  if (!user || user.disabled) throw authError('TOKEN_INVALID', 'invalid', shape);
  return { username: user.username, role: user.role, privileges: await privilegesOf(deps, user), claims, user };
}

/** The union of the privileges of the user's custom roles. */
export async function privilegesOf(deps: Pick<SiteDeps, 'store'>, user: UserRecord): Promise<Set<Privilege>> {
  const out = new Set<Privilege>();
  for (const name of user.roles) {
    const role = await deps.store.getRole(name);
    for (const p of role?.privileges ?? []) out.add(p);
  }
  return out;
}

/** Whether the token of `req` came from the `geo_authcookie` cookie (no other carrier holds one). */
function fromCookieOnly(req: Request, deps: Pick<SiteDeps, 'config'>, options: AuthenticateOptions): boolean {
  const other = tokenFromRequest(req, {
    headerAlias: deps.config.headerAlias,
    cookie: false,
    ...(options.params ? { params: options.params } : {}),
  });
  return other === undefined;
}

/**
 * CSRF defence for cookie authentication: a browser sends the cookie on cross-site form posts too,
 * so a state-changing request (anything but GET/HEAD) authenticated by the cookie must come from a
 * page of this site: its `Origin` (or, when absent, its `Referer`) must have the site's origin.
 * Throws FORBIDDEN otherwise. Decision: a request with neither header is refused.
 */
export function assertSameOrigin(req: Request, deps: Pick<SiteDeps, 'config'>): void {
  const method = req.method.toUpperCase();
  if (method === 'GET' || method === 'HEAD') return;
  const site = originOf(req, deps.config);
  const origin = req.headers.get('origin');
  let from: string | undefined;
  if (origin !== null && origin !== 'null') from = origin;
  else if (origin === null) {
    const referer = req.headers.get('referer');
    if (referer !== null && URL.canParse(referer)) from = new URL(referer).origin;
  }
  if (from === undefined || from.toLowerCase() !== site.toLowerCase()) {
    throw forbidden('a cookie-authenticated request that changes state must come from a page of this site');
  }
}

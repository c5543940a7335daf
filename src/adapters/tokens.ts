/**
 * The token core of the site server (issue 17, protocols.md §0.4, §0.5, §1.5, §1.7): a rotating key
 * ring, signed tokens (compact JWS, HS256, via `jose`), their validation with client binding and
 * revocation, and reading a token from a request's carriers. No HTTP answers, no store: the ring is
 * plain data (`ring.data()`) that a store persists and hands back to `createKeyRing`.
 *
 * Token = compact JWS, protected header `{alg:'HS256', kid, typ:'JWT'}`, payload
 * `{sub, aud, iat, exp, jti, bind:{t,v}, ssl?}`. `iat`/`exp` are epoch **milliseconds** as §1.7 gives
 * them (the tokens are opaque to clients), so they are checked here, not by a generic JWT verifier.
 */
import { base64url, compactVerify, CompactSign, type JWSHeaderParameters } from 'jose';
import { EngineError } from '../core/errors.js';
import type { Params } from './rest.js';

/** Milliseconds since the epoch; injected so expiry and revocation are testable to the millisecond. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** One HS256 signing key. `secret` is 256 random bits, base64url. Retired keys no longer verify. */
export interface SigningKey {
  readonly kid: string;
  readonly secret: string;
  readonly createdAt: number;
  readonly retiredAt?: number;
}

/** Everything a store persists: keys (last one not retired is current) and revocations. */
export interface KeyRingData {
  readonly keys: readonly SigningKey[];
  /** subject -> instant: tokens of that subject issued before it are refused. */
  readonly revokedSubjects: Readonly<Record<string, number>>;
  /** jti -> the token's exp (the entry may be dropped after that). */
  readonly revokedIds: Readonly<Record<string, number>>;
}

export interface KeyRing {
  readonly clock: Clock;
  /** A copy of the ring's state, JSON-serialisable. */
  data(): KeyRingData;
  /** The key new tokens are signed with. */
  current(): SigningKey;
  /** Adds a new current key; older keys keep verifying until retired. */
  rotate(): SigningKey;
  /** Stops a key from verifying (tokens signed with it become invalid). The current key cannot be retired. */
  retire(kid: string): void;
}

export interface KeyRingOptions {
  readonly keys?: readonly SigningKey[];
  readonly revokedSubjects?: Readonly<Record<string, number>>;
  readonly revokedIds?: Readonly<Record<string, number>>;
}

const randomPart = (bytes: number): string => base64url.encode(crypto.getRandomValues(new Uint8Array(bytes)));

function newKey(clock: Clock): SigningKey {
  return { kid: randomPart(9), secret: randomPart(32), createdAt: clock.now() };
}

/** A key ring from persisted data, or a fresh one with one new key. */
export function createKeyRing(clock: Clock = systemClock, options: KeyRingOptions = {}): KeyRing {
  const keys: SigningKey[] = [...(options.keys ?? [])];
  // Null-prototype maps: a subject or jti named `__proto__` or `constructor` is an entry like any other.
  const revokedSubjects: Record<string, number> = Object.assign(Object.create(null) as Record<string, number>, options.revokedSubjects);
  const revokedIds: Record<string, number> = Object.assign(Object.create(null) as Record<string, number>, options.revokedIds);
  for (const k of keys) {
    if (base64url.decode(k.secret).length < 32) throw new EngineError('INVALID_ARGUMENT', `signing key ${k.kid} is shorter than 256 bits`);
  }
  if (!keys.some((k) => k.retiredAt === undefined)) keys.push(newKey(clock));
  const ring: KeyRing & RingInternals = {
    clock,
    revokedSubjects,
    revokedIds,
    keys,
    data: () => ({ keys: keys.map((k) => ({ ...k })), revokedSubjects: { ...revokedSubjects }, revokedIds: { ...revokedIds } }),
    current: () => keys.findLast((k) => k.retiredAt === undefined)!,
    rotate: () => {
      const k = newKey(clock);
      keys.push(k);
      return k;
    },
    retire: (kid) => {
      const i = keys.findIndex((k) => k.kid === kid);
      if (i < 0) throw new EngineError('INVALID_ARGUMENT', `no signing key ${kid}`);
      if (keys[i] === ring.current()) throw new EngineError('INVALID_ARGUMENT', `signing key ${kid} is the current key; rotate first`);
      keys[i] = { ...keys[i]!, retiredAt: clock.now() };
    },
  };
  return ring;
}

interface RingInternals {
  readonly keys: SigningKey[];
  readonly revokedSubjects: Record<string, number>;
  readonly revokedIds: Record<string, number>;
  /** Brings the ring up to date with the store before it signs or verifies (several servers on one store). */
  sync?: () => Promise<void>;
}

const internals = (ring: KeyRing): RingInternals => ring as unknown as RingInternals;

/**
 * Merges a ring's persisted data (another server's changes) into `ring`: keys it lacks are added,
 * retirements and revocations are kept from both (the later revocation instant of a subject), token
 * ids past their expiry are dropped. Keys are ordered by creation, so every server that has the same
 * keys signs with the same current one.
 */
export function absorbKeyRing(ring: KeyRing, data: KeyRingData): void {
  const { keys, revokedSubjects, revokedIds } = internals(ring);
  for (const k of data.keys) {
    const i = keys.findIndex((x) => x.kid === k.kid);
    if (i < 0) keys.push({ ...k });
    else if (k.retiredAt !== undefined && keys[i]!.retiredAt === undefined) keys[i] = { ...keys[i]!, retiredAt: k.retiredAt };
  }
  // Stable: keys made in the same millisecond keep their order (a rotation's new key stays last here).
  keys.sort((a, b) => a.createdAt - b.createdAt);
  for (const [subject, at] of Object.entries(data.revokedSubjects))
    revokedSubjects[subject] = Math.max(revokedSubjects[subject] ?? -Infinity, at);
  const now = ring.clock.now();
  for (const [id, exp] of Object.entries(data.revokedIds)) if (exp > now) revokedIds[id] = exp;
}

/** Sets what the ring awaits before each issueToken and verifyToken (the site's freshness check). */
export function setKeyRingSync(ring: KeyRing, sync: (() => Promise<void>) | undefined): void {
  internals(ring).sync = sync;
}

/** Tokens of `subject` issued before `at` are refused from now on (sign-out everywhere, password change). */
export function revokeSubject(ring: KeyRing, subject: string, at: number = ring.clock.now()): void {
  const r = internals(ring).revokedSubjects;
  r[subject] = Math.max(r[subject] ?? -Infinity, at);
}

/** One token is refused from now on (by its `jti`); entries past `exp` are dropped. */
export function revokeTokenId(ring: KeyRing, jti: string, exp: number): void {
  const r = internals(ring).revokedIds;
  const now = ring.clock.now();
  for (const [id, e] of Object.entries(r)) if (e <= now) delete r[id];
  r[jti] = exp;
}

/** `none`: not bound to a client (OAuth 2.0 access tokens and the sign-in cookie, which travel between apps). */
export type BindingKind = 'referer' | 'ip' | 'requestip' | 'none';

/** §0.5: `requestip` is bound to the address that asked for the token and is then checked like `ip`. */
export interface Binding {
  readonly kind: BindingKind;
  readonly value: string;
}

export interface TokenClaims {
  readonly sub: string;
  /** `portal`, `admin` or `server:<normalised root>` (§1.7). */
  readonly aud: string;
  readonly iat: number;
  readonly exp: number;
  readonly jti: string;
  readonly bind: { readonly t: BindingKind; readonly v: string };
  readonly ssl?: boolean;
  readonly kid: string;
}

export interface IssueOptions {
  readonly subject: string;
  readonly audience: string;
  readonly binding: Binding;
  /** Epoch ms; must be after now. */
  readonly expiresAt: number;
  readonly ssl?: boolean;
}

const BINDING_KINDS: readonly string[] = ['referer', 'ip', 'requestip', 'none'];

/** A compact JWS for `options`, signed with the ring's current key. */
export async function issueToken(ring: KeyRing, options: IssueOptions): Promise<string> {
  const iat = ring.clock.now();
  if (!options.subject) throw new EngineError('INVALID_ARGUMENT', 'a token needs a subject', { path: 'subject' });
  if (!options.audience) throw new EngineError('INVALID_ARGUMENT', 'a token needs an audience', { path: 'audience' });
  if (!BINDING_KINDS.includes(options.binding.kind))
    throw new EngineError('INVALID_ARGUMENT', `unknown binding ${options.binding.kind}`, { path: 'binding' });
  if (!Number.isFinite(options.expiresAt) || options.expiresAt <= iat) {
    throw new EngineError('INVALID_ARGUMENT', 'a token must expire after it is issued', { path: 'expiresAt' });
  }
  await internals(ring).sync?.();
  const key = ring.current();
  const payload = {
    sub: options.subject,
    aud: options.audience,
    iat,
    exp: Math.floor(options.expiresAt),
    jti: randomPart(16),
    bind: { t: options.binding.kind, v: options.binding.value.trim() },
    ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
  };
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'JWT' })
    .sign(base64url.decode(key.secret));
}

export interface VerifyOptions {
  /** The audience(s) the endpoint accepts; the token's `aud` must equal one of them. */
  readonly audience: string | readonly string[];
  /** What the binding is checked against: the `Referer` header and the client address (§0.5). */
  readonly request: { readonly referer?: string | undefined; readonly ip: string };
  /** Defaults to the ring's clock. */
  readonly now?: number;
}

const invalid = (why: string): EngineError => new EngineError('TOKEN_INVALID', `invalid token: ${why}`);

const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const MAX_TOKEN_CHARS = 4096;

/**
 * The claims of a valid token, else throws: TOKEN_EXPIRED when `now >= exp` (no grace, §1.7);
 * TOKEN_INVALID for a malformed or tampered token, an unknown or retired `kid`, another audience, a
 * binding that does not match the request, or a revoked subject or id.
 */
export async function verifyToken(ring: KeyRing, token: string, options: VerifyOptions): Promise<TokenClaims> {
  if (typeof token !== 'string' || token.length > MAX_TOKEN_CHARS || !COMPACT.test(token)) throw invalid('not a token');
  await internals(ring).sync?.();
  const { keys, revokedSubjects, revokedIds } = internals(ring);
  let payloadBytes: Uint8Array;
  let kid: string;
  try {
    const result = await compactVerify(
      token,
      (header: JWSHeaderParameters) => {
        const key = keys.find((k) => k.kid === header.kid && k.retiredAt === undefined);
        if (!key) throw invalid('unknown or retired signing key');
        return base64url.decode(key.secret);
      },
      { algorithms: ['HS256'] },
    );
    payloadBytes = result.payload;
    kid = result.protectedHeader.kid!;
  } catch (e) {
    if (e instanceof EngineError) throw e;
    throw new EngineError('TOKEN_INVALID', 'invalid token: bad signature or encoding', { cause: e });
  }
  const claims = parseClaims(payloadBytes, kid);
  const now = options.now ?? ring.clock.now();
  if (now >= claims.exp) throw new EngineError('TOKEN_EXPIRED', 'the token has expired');
  const audiences: readonly string[] = typeof options.audience === 'string' ? [options.audience] : options.audience;
  if (!audiences.includes(claims.aud)) throw invalid('issued for another audience');
  if (!bindingMatches(claims.bind, options.request)) throw invalid('ClientID does not match');
  const revokedAt = revokedSubjects[claims.sub];
  if (revokedAt !== undefined && claims.iat < revokedAt) throw invalid('revoked');
  if (revokedIds[claims.jti] !== undefined) throw invalid('revoked');
  return claims;
}

function parseClaims(bytes: Uint8Array, kid: string): TokenClaims {
  let p: unknown;
  try {
    p = JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new EngineError('TOKEN_INVALID', 'invalid token: payload is not JSON', { cause: e });
  }
  const o = p as Record<string, unknown>;
  const bind = o?.['bind'] as Record<string, unknown> | undefined;
  const ok =
    typeof o === 'object' &&
    o !== null &&
    typeof o['sub'] === 'string' &&
    typeof o['aud'] === 'string' &&
    typeof o['jti'] === 'string' &&
    Number.isFinite(o['iat']) &&
    Number.isFinite(o['exp']) &&
    typeof bind === 'object' &&
    bind !== null &&
    typeof bind['t'] === 'string' &&
    BINDING_KINDS.includes(bind['t']) &&
    typeof bind['v'] === 'string' &&
    (o['ssl'] === undefined || typeof o['ssl'] === 'boolean');
  if (!ok) throw invalid('malformed claims');
  return { ...(o as unknown as Omit<TokenClaims, 'kid'>), kid };
}

/**
 * §0.5: ip/requestip -> exact address equality. referer -> exact equality after trimming (non-URL
 * referers such as `@esri/arcgis-rest-js` or `http`), or, when the bound value is an absolute http(s)
 * URL, a request referer with the same origin whose path starts with the bound path on a `/` boundary.
 */
export function bindingMatches(bind: TokenClaims['bind'], request: VerifyOptions['request']): boolean {
  if (bind.t === 'none') return true;
  if (bind.t !== 'referer') return request.ip === bind.v;
  const got = request.referer?.trim();
  if (got === undefined || got === '') return false;
  if (got === bind.v) return true;
  const bound = absoluteUrl(bind.v);
  const asked = absoluteUrl(got);
  if (!bound || !asked || bound.origin !== asked.origin) return false;
  const base = bound.pathname;
  if (base.endsWith('/')) return asked.pathname.startsWith(base);
  return asked.pathname === base || asked.pathname.startsWith(`${base}/`);
}

function absoluteUrl(s: string): URL | undefined {
  if (!URL.canParse(s)) return undefined;
  const u = new URL(s);
  return u.protocol === 'https:' || u.protocol === 'http:' ? u : undefined;
}

/** The cookie set by the sign-in page (issue 17, OAuth); the lowest-precedence carrier. */
export const AUTH_COOKIE = 'geo_authcookie';

export interface TokenFromRequestOptions {
  /** Accept the vendor's `X-Esri-Authorization` header name (§0.4 item 3); on unless switched off. */
  readonly headerAlias?: boolean;
  /** The request's parameters (`readParams`), for a `token` in the body; without them only the query is read. */
  readonly params?: Params;
  /** Read the `geo_authcookie` cookie (default true). */
  readonly cookie?: boolean;
}

const BEARER = /^Bearer[ ]+([^\s]+)\s*$/i;

/**
 * The token a request carries, or undefined when none (the caller answers 499 TOKEN_REQUIRED if the
 * resource is secured). Precedence (§0.4; the higher wins when two differ): `X-Geo-Authorization`,
 * `Authorization`, `X-Esri-Authorization` (alias), body `token`, query `token`, then the
 * `geo_authcookie` cookie. A header without the `Bearer ` prefix is TOKEN_INVALID (498).
 */
export function tokenFromRequest(req: Request, options: TokenFromRequestOptions = {}): string | undefined {
  const headers = ['x-geo-authorization', 'authorization', ...(options.headerAlias === false ? [] : ['x-esri-authorization'])];
  for (const name of headers) {
    const value = req.headers.get(name);
    if (value === null) continue;
    const m = BEARER.exec(value.trim());
    if (!m) throw new EngineError('TOKEN_INVALID', `invalid token: the ${name} header is not "Bearer <token>"`);
    return m[1]!;
  }
  const param = options.params ? options.params.get('token') : queryToken(req.url);
  if (param !== undefined && param !== '') return param;
  if (options.cookie !== false) {
    const c = cookieValue(req.headers.get('cookie'), AUTH_COOKIE);
    if (c) return c;
  }
  return undefined;
}

function queryToken(url: string): string | undefined {
  const q = new URL(url).searchParams;
  let found: string | undefined;
  for (const [k, v] of q) if (k.toLowerCase() === 'token') found = v; // last occurrence wins, as in readParams
  return found;
}

function cookieValue(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim() || undefined;
  }
  return undefined;
}

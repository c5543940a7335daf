/**
 * The REST layer every adapter shares (spec/protocols.md §0): request parameters (§0.1), the `f`
 * response format (§0.2), the two error shapes with errors travelling on HTTP 200 (§0.3), and the
 * POST-only / HTTPS-only rules (§0.6). Host-agnostic: web-standard Request/Response only, no routing,
 * no server, no store. Errors are EngineErrors rendered through ERROR_TABLE.
 */
import { EngineError, ERROR_TABLE, toEngineError, withPath } from '../core/errors.js';

// ---------------------------------------------------------------------------------------------
// Handlers

/** One endpoint: a web-standard request in, a response out. */
export type Handler = (req: Request) => Promise<Response>;

/** An endpoint factory: dependencies (clock, store, engine, config) injected, a Handler out. */
export type HandlerFactory<D> = (deps: D) => Handler;

/** Identity that types an endpoint factory, so every adapter declares its deps the same way. */
export const handler = <D>(factory: HandlerFactory<D>): HandlerFactory<D> => factory;

/**
 * One mounted endpoint. Each adapter family exports `xxxRoutes(deps): Route[]` and the host mounts
 * them as they are: `path` is a Hono path pattern (`/server/admin/services/*`), `method` `ALL` takes
 * every method (the handler answers 405 itself where the protocol wants a body for it).
 */
export interface Route {
  readonly method: 'GET' | 'POST' | 'ALL';
  readonly path: string;
  readonly handler: Handler;
}

// ---------------------------------------------------------------------------------------------
// Parameters (§0.1)

/** Default limit on a request body: 10 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

export interface ReadParamsOptions {
  /** Largest body accepted, in bytes (default: the site's maxBodyBytes recorded on the request, else DEFAULT_MAX_BODY_BYTES). */
  readonly maxBodyBytes?: number;
  /** The setting the 413 names for an explicit `maxBodyBytes` (none when absent); the site's limit is named maxBodyBytes. */
  readonly limitName?: string;
}

/** Where a parameter came from. */
export type ParamSource = 'query' | 'body';

export interface RawParam {
  /** The name as the client spelled it. */
  readonly name: string;
  readonly value: string;
  readonly source: ParamSource;
}

/** Request parameters with case-insensitive names; the body wins over the query string (§0.1.1). */
export interface Params {
  /** The value of `name` (any case); within one source the last occurrence wins. */
  get(name: string): string | undefined;
  has(name: string): boolean;
  /** `true`/`false` in any case (§0.1.4); absent -> undefined; anything else -> INVALID_ARGUMENT. */
  bool(name: string): boolean | undefined;
  /**
   * A list of scalars (§0.1.4): a JSON array of strings/numbers, or comma-joined text (items trimmed,
   * empty items dropped); absent -> undefined; a JSON array holding anything else -> INVALID_ARGUMENT.
   */
  list(name: string): string[] | undefined;
  /** Every parameter in arrival order, query first, names as sent. */
  readonly entries: readonly RawParam[];
  /** File parts of a multipart body, by lower-cased name (last one wins). */
  file(name: string): File | undefined;
  readonly files: readonly { readonly name: string; readonly file: File }[];
}

/** An EngineError that is a transport-level failure (§0.3): it is answered with this HTTP status, not 200. */
export class TransportError extends EngineError {
  readonly httpStatus: number;
  constructor(httpStatus: number, ...args: ConstructorParameters<typeof EngineError>) {
    super(...args);
    this.httpStatus = httpStatus;
  }
}

const parsed = new WeakMap<Request, Params>();
const bodyLimits = new WeakMap<Request, number>();

/**
 * The host records the site's `maxBodyBytes` on each request here before its handler runs (as it
 * records the peer address), so that every `readParams` of the request applies it; an explicit
 * `options.maxBodyBytes` still wins (import-site's own, larger limit).
 */
export function setBodyLimit(req: Request, maxBodyBytes: number): Request {
  bodyLimits.set(req, maxBodyBytes);
  return req;
}

/** The body limit recorded on `req` by the host, if any. */
export const bodyLimitOf = (req: Request): number | undefined => bodyLimits.get(req);

/**
 * Read the query string and an `application/x-www-form-urlencoded` or `multipart/form-data` body
 * (a body without a content type is read as urlencoded; other content types are ignored). The
 * result is cached per Request, so a second call (or the error wrapper looking for `f`) is free.
 */
export async function readParams(req: Request, options: ReadParamsOptions = {}): Promise<Params> {
  const cached = parsed.get(req);
  if (cached) return cached;
  const maxBodyBytes = options.maxBodyBytes ?? bodyLimits.get(req) ?? DEFAULT_MAX_BODY_BYTES;
  const entries: RawParam[] = [];
  const files: { name: string; file: File }[] = [];

  const search = new URL(req.url).search.slice(1);
  // Decision: a parameter with an empty name (`=x`, a form part with `name=""`) cannot be asked for:
  // it is dropped, so that no error about it can name an empty path.
  for (const [name, value] of parseUrlEncoded(new TextEncoder().encode(search), 'query'))
    if (name !== '') entries.push({ name, value, source: 'query' });

  const contentType = (req.headers.get('content-type') ?? '').toLowerCase();
  const mediaType = contentType.split(';')[0]!.trim();
  if (req.body !== null && (mediaType === '' || mediaType === 'application/x-www-form-urlencoded' || mediaType === 'multipart/form-data')) {
    const bytes = await readBody(req, maxBodyBytes, options.maxBodyBytes === undefined ? 'maxBodyBytes' : options.limitName);
    if (mediaType === 'multipart/form-data') {
      for (const [name, value] of await parseMultipart(bytes, req.headers.get('content-type')!)) {
        if (name === '') continue;
        if (typeof value === 'string') entries.push({ name, value, source: 'body' });
        else files.push({ name, file: value });
      }
    } else {
      for (const [name, value] of parseUrlEncoded(bytes, 'body')) if (name !== '') entries.push({ name, value, source: 'body' });
    }
  }

  const byName = new Map<string, string>();
  for (const e of entries) if (e.source === 'query') byName.set(e.name.toLowerCase(), e.value);
  for (const e of entries) if (e.source === 'body') byName.set(e.name.toLowerCase(), e.value);
  const fileByName = new Map<string, File>();
  for (const f of files) fileByName.set(f.name.toLowerCase(), f.file);

  const params: Params = {
    get: (name) => byName.get(name.toLowerCase()),
    has: (name) => byName.has(name.toLowerCase()) || fileByName.has(name.toLowerCase()),
    bool: (name) => {
      const v = byName.get(name.toLowerCase());
      if (v === undefined) return undefined;
      const t = v.trim().toLowerCase();
      if (t === 'true') return true;
      if (t === 'false') return false;
      throw new EngineError('INVALID_ARGUMENT', `'${name}' must be true or false, got '${v}'`, { path: name });
    },
    list: (name) => parseList(name, byName.get(name.toLowerCase())),
    entries,
    file: (name) => fileByName.get(name.toLowerCase()),
    files,
  };
  parsed.set(req, params);
  return params;
}

function parseList(name: string, v: string | undefined): string[] | undefined {
  if (v === undefined) return undefined;
  const t = v.trim();
  if (t.startsWith('[')) {
    let json: unknown;
    try {
      json = JSON.parse(t);
    } catch {
      throw new EngineError('INVALID_ARGUMENT', `'${name}' is not a valid JSON array`, { path: name });
    }
    if (!Array.isArray(json) || !json.every((x) => typeof x === 'string' || typeof x === 'number')) {
      throw new EngineError('INVALID_ARGUMENT', `'${name}' must be a JSON array of strings or numbers`, { path: name });
    }
    return json.map(String);
  }
  return t
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
}

/**
 * A request body read whole, refused with 413 LIMIT_EXCEEDED past `limit` bytes (declared or
 * streamed); the message names `setting` when one is given (readParams: `maxBodyBytes`).
 */
export async function readBody(req: Request, limit: number, setting?: string): Promise<Uint8Array> {
  const named = setting === undefined ? '' : ` (${setting})`;
  const tooLarge = () =>
    new TransportError(413, 'LIMIT_EXCEEDED', `the request body exceeds the limit of ${limit} bytes${named}`, {
      path: 'body',
      details: [`The request body exceeds the limit of ${limit} bytes${named}.`],
    });
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const reader = (req.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function hexDigit(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  return -1;
}

/** WHATWG urlencoded percent-decoding to bytes (`+` is a space; a bad `%` escape stays literal). */
function percentDecode(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === 0x2b) out[n++] = 0x20;
    else if (b === 0x25 && i + 2 < bytes.length && hexDigit(bytes[i + 1]!) >= 0 && hexDigit(bytes[i + 2]!) >= 0) {
      out[n++] = hexDigit(bytes[i + 1]!) * 16 + hexDigit(bytes[i + 2]!);
      i += 2;
    } else out[n++] = b;
  }
  return out.subarray(0, n);
}

/**
 * Parse urlencoded bytes, decoding names and values as strict UTF-8: an undecodable value is an
 * INVALID_ARGUMENT naming its parameter; an undecodable name names `where` (`query` or `body`).
 */
export function parseUrlEncoded(bytes: Uint8Array, where: ParamSource): [string, string][] {
  const out: [string, string][] = [];
  let start = 0;
  for (let i = 0; i <= bytes.length; i++) {
    if (i < bytes.length && bytes[i] !== 0x26) continue;
    const part = bytes.subarray(start, i);
    start = i + 1;
    if (part.length === 0) continue;
    const eq = part.indexOf(0x3d);
    const rawName = eq < 0 ? part : part.subarray(0, eq);
    const rawValue = eq < 0 ? new Uint8Array(0) : part.subarray(eq + 1);
    let name: string;
    try {
      name = utf8.decode(percentDecode(rawName));
    } catch {
      throw new EngineError('INVALID_ARGUMENT', `a parameter name in the ${where} is not valid UTF-8`, { path: where });
    }
    try {
      out.push([name, utf8.decode(percentDecode(rawValue))]);
    } catch {
      if (name === '')
        throw new EngineError('INVALID_ARGUMENT', `an unnamed parameter in the ${where} is not valid UTF-8`, { path: where });
      throw new EngineError('INVALID_ARGUMENT', `'${name}' is not valid UTF-8`, { path: name });
    }
  }
  return out;
}

const REPLACEMENT_UTF8 = [0xef, 0xbf, 0xbd];

function containsReplacementBytes(bytes: Uint8Array): boolean {
  for (let i = 0; i + 2 < bytes.length; i++) {
    if (bytes[i] === REPLACEMENT_UTF8[0] && bytes[i + 1] === REPLACEMENT_UTF8[1] && bytes[i + 2] === REPLACEMENT_UTF8[2]) return true;
  }
  return false;
}

async function parseMultipart(bytes: Uint8Array, contentType: string): Promise<[string, string | File][]> {
  let form: FormData;
  try {
    form = await new Response(bytes, { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw new EngineError('INVALID_ARGUMENT', 'the multipart/form-data body is malformed', { path: 'body' });
  }
  // FormData decodes text parts leniently; a U+FFFD the client did not send means invalid UTF-8.
  const sentReplacement = containsReplacementBytes(bytes);
  const out: [string, string | File][] = [];
  for (const [name, value] of form) {
    if (!sentReplacement && name.includes('\uFFFD')) {
      throw new EngineError('INVALID_ARGUMENT', 'a parameter name in the body is not valid UTF-8', { path: 'body' });
    }
    if (!sentReplacement && typeof value === 'string' && value.includes('\uFFFD')) {
      if (name === '') throw new EngineError('INVALID_ARGUMENT', 'an unnamed parameter in the body is not valid UTF-8', { path: 'body' });
      throw new EngineError('INVALID_ARGUMENT', `'${name}' is not valid UTF-8`, { path: name });
    }
    out.push([name, value]);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Responses (§0.2)

export const FORMATS = ['html', 'json', 'pjson'] as const;
export type Format = (typeof FORMATS)[number];

const JSON_TYPE = 'application/json; charset=utf-8';
const HTML_TYPE = 'text/html; charset=utf-8';

export interface RespondOptions {
  /** Page title of the html form (default `rasterflow`). */
  readonly title?: string;
  /** Add `Cache-Control: no-store` (bodies with a token, errors about a token; §0.2). */
  readonly noStore?: boolean;
  /** HTTP status (default 200). */
  readonly status?: number;
}

/** The format `f` asks for: absent or empty -> html (§0.2); anything unknown -> INVALID_FORMAT. */
export function parseFormat(f: string | undefined): Format {
  if (f === undefined || f === '') return 'html';
  const lower = f.toLowerCase();
  if ((FORMATS as readonly string[]).includes(lower)) return lower as Format;
  throw new EngineError('INVALID_FORMAT', `'f' must be one of html, json, pjson.`, {
    path: 'f',
    details: [`'f' must be one of html, json, pjson.`],
  });
}

/** Escape text for HTML element content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A minimal HTML page showing `value` as pretty JSON in a <pre> block; everything escaped. */
export function htmlPage(title: string, value: unknown): string {
  const t = escapeHtml(title);
  const body = escapeHtml(JSON.stringify(value, null, 2) ?? 'null');
  return (
    `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${t}</title></head>\n` +
    `<body>\n<h1>${t}</h1>\n<pre>${body}</pre>\n</body>\n</html>\n`
  );
}

/**
 * Answer `value` in the format `f` asks for (§0.2). An unknown `f` answers the INVALID_FORMAT error
 * in the sharing shape as JSON, HTTP 200.
 */
export function respond(f: string | undefined, value: unknown, options: RespondOptions = {}): Response {
  let format: Format;
  try {
    format = parseFormat(f);
  } catch (e) {
    return errorResponse('sharing', e, 'json');
  }
  const headers = new Headers({ 'content-type': format === 'html' ? HTML_TYPE : JSON_TYPE });
  if (options.noStore) headers.set('cache-control', 'no-store');
  const body =
    format === 'html'
      ? htmlPage(options.title ?? 'rasterflow', value)
      : format === 'pjson'
        ? JSON.stringify(value, null, 2)
        : JSON.stringify(value);
  return new Response(body, { status: options.status ?? 200, headers });
}

// ---------------------------------------------------------------------------------------------
// Errors (§0.3)

export type ErrorShape = 'sharing' | 'admin';

export interface SharingErrorBody {
  readonly error: { readonly code: number; readonly message: string; readonly details: readonly string[] };
}

export interface AdminErrorBody {
  readonly status: 'error';
  readonly messages: readonly string[];
  readonly code: number;
}

/**
 * A 400 whose `message` on the wire is its own instead of the error table's (the operation's
 * sentence: "Unable to register federation.", "Unable to complete operation."), with `details`.
 */
export class MessageError extends EngineError {
  readonly publicMessage: string;
  constructor(publicMessage: string, details: readonly string[]) {
    super(
      'INVALID_ARGUMENT',
      details.length > 0 ? details.join(' ') : publicMessage,
      details.length > 0 ? { details: [...details] } : { issues: [] },
    );
    this.publicMessage = publicMessage;
  }
}

/** The message an error shows: a MessageError's own, else the error table's. */
const publicMessage = (e: EngineError): string => (e instanceof MessageError ? e.publicMessage : ERROR_TABLE[e.code].protocolMessage);

/** Server-side faults (HTTP status >= 500 in the table) show only the table's message. */
const hidden = (e: EngineError): boolean => ERROR_TABLE[e.code].httpStatus >= 500;

/** 5xx codes whose explicit `details` are written for the caller and shown (exportSite, protocols.md §3.2; which limit a busy or timed-out request met). */
const SHOWN_DETAILS: ReadonlySet<string> = new Set(['LOCATION_NOT_ACCESSIBLE', 'SERVER_BUSY', 'TIMEOUT']);

/** What the caller is told beyond the message: explicit details, else each issue with its path. */
function errorDetails(e: EngineError): string[] {
  if (hidden(e)) return SHOWN_DETAILS.has(e.code) ? [...e.details] : [];
  if (e.details.length > 0) return [...e.details];
  return e.issues.map(withPath);
}

/** The sharing/REST error body: `{"error":{"code","message","details"}}`, code and message from ERROR_TABLE. */
export function sharingError(thrown: unknown): SharingErrorBody {
  const e = toEngineError(thrown);
  const info = ERROR_TABLE[e.code];
  return { error: { code: info.httpStatus, message: publicMessage(e), details: errorDetails(e) } };
}

/** The admin error body: `{"status":"error","messages":[...],"code":N}`; messages default to the table's message. */
export function adminError(thrown: unknown): AdminErrorBody {
  const e = toEngineError(thrown);
  const info = ERROR_TABLE[e.code];
  const details = errorDetails(e);
  return { status: 'error', messages: details.length > 0 ? details : [publicMessage(e)], code: info.httpStatus };
}

/**
 * HTTP status of an error response: 200 for application errors (§0.3), the transport status for a
 * TransportError (413 body too large), 500 for an unexpected crash (INTERNAL).
 */
export function transportStatus(thrown: unknown): number {
  const e = toEngineError(thrown);
  if (e instanceof TransportError) return e.httpStatus;
  return e.code === 'INTERNAL' ? 500 : 200;
}

/** Render anything thrown as an error response in `shape`, in format `f` (unknown f -> JSON). */
export function errorResponse(shape: ErrorShape, thrown: unknown, f?: string): Response {
  const body = shape === 'sharing' ? sharingError(thrown) : adminError(thrown);
  let format: Format;
  try {
    format = parseFormat(f);
  } catch {
    format = 'json';
  }
  const status = transportStatus(thrown);
  const headers = new Headers({ 'content-type': format === 'html' ? HTML_TYPE : JSON_TYPE, 'cache-control': 'no-store' });
  // A busy server says when to come back (clients and proxies that honour Retry-After wait a second).
  if (toEngineError(thrown).code === 'SERVER_BUSY') headers.set('retry-after', '1');
  const text = format === 'html' ? htmlPage('Error', body) : format === 'pjson' ? JSON.stringify(body, null, 2) : JSON.stringify(body);
  return new Response(text, { status, headers });
}

/**
 * The `f` of a request for rendering its error: from its parameters (read now if the handler failed
 * before reading them, e.g. on the HTTPS rule, so that a body `f=json` is honoured), else the query.
 */
async function formatOf(req: Request): Promise<string | undefined> {
  const p = parsed.get(req) ?? (req.bodyUsed ? undefined : await readParams(req).catch(() => undefined));
  if (p) return p.get('f');
  try {
    for (const [k, v] of new URL(req.url).searchParams) if (k.toLowerCase() === 'f') return v;
  } catch {
    // An unparsable URL has no f.
  }
  return undefined;
}

/** Wrap a handler so that anything it throws becomes the error response of `shape` (never a stack trace). */
export function withRestErrors(shape: ErrorShape, fn: Handler): Handler {
  return async (req) => {
    try {
      return await fn(req);
    } catch (e) {
      return errorResponse(shape, e, await formatOf(req));
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Method and transport rules (§0.6, §6)

/** Throws METHOD_NOT_ALLOWED (405 "Method not supported.", no details) unless the request is a POST. */
export function requirePost(req: Request): void {
  if (req.method.toUpperCase() !== 'POST') {
    throw new EngineError('METHOD_NOT_ALLOWED', `${req.method} is not supported here; use POST`, { issues: [] });
  }
}

export interface HttpsOptions {
  /** HTTPS is required (the organisation's `allSSL`, or always for generateToken). */
  readonly allSSL: boolean;
  /** The peer is a trusted proxy, so its `X-Forwarded-Proto` counts (the host decides, from the peer address). */
  readonly trustProxy: boolean;
}

/**
 * Whether the request came over HTTPS: the URL scheme (the host builds it from the socket), or the
 * last `X-Forwarded-Proto` value (the one the nearest proxy added) when that proxy is trusted.
 */
export function isHttps(req: Request, trustProxy: boolean): boolean {
  if (new URL(req.url).protocol === 'https:') return true;
  if (!trustProxy) return false;
  const forwarded = req.headers.get('x-forwarded-proto');
  if (forwarded === null) return false;
  const last = forwarded.split(',').pop()!.trim().toLowerCase();
  return last === 'https';
}

/** Throws HTTPS_REQUIRED (403 "SSL Required", details ["SSL Required"]) when `allSSL` and the request is plain HTTP. */
export function requireHttps(req: Request, options: HttpsOptions): void {
  if (options.allSSL && !isHttps(req, options.trustProxy)) {
    throw new EngineError('HTTPS_REQUIRED', 'HTTPS is required', { details: ['SSL Required'] });
  }
}

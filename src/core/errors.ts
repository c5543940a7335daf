/**
 * One error type for the whole engine: a closed code union, a message that names the field, and a
 * JSON path into the rendering rule (or the request parameter) that caused it. Thrown while parsing
 * and planning, never inside kernels. `ERROR_TABLE` below is total over the codes
 * (`Record<ErrorCode, ...>`), so a new code that nobody maps is a compile error; the CLI takes its exit
 * status from it, and the protocol adapters take their HTTP status and message from it.
 */
export const ERROR_CODES = [
  'INVALID_RULE',
  'UNKNOWN_FUNCTION',
  'INVALID_ARGUMENT',
  'INVALID_FORMAT',
  'UNSUPPORTED_INPUT',
  'LIMIT_EXCEEDED',
  'IO_ERROR',
  'HTTPS_REQUIRED',
  'METHOD_NOT_ALLOWED',
  'INVALID_CREDENTIALS',
  'TOKEN_REQUIRED',
  'TOKEN_INVALID',
  'TOKEN_EXPIRED',
  'EXPIRATION_TOO_LONG',
  'SERVER_NOT_REGISTERED',
  'LOCATION_NOT_ACCESSIBLE',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'TOO_MANY_ATTEMPTS',
  'SERVER_BUSY',
  'TIMEOUT',
  'ABORTED',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** What each code means at the edges: the CLI's exit status and the HTTP status of a REST error. */
export interface ErrorCodeInfo {
  /** Exit status of `rasterflow` when a command fails with this code (2 is kept for usage errors). */
  readonly exitStatus: number;
  /** HTTP status (and the `code` of the REST error object) the protocol adapters answer with. */
  readonly httpStatus: number;
  /** The REST error object's `message` when the detail is not shown to the caller (server-side faults). */
  readonly protocolMessage: string;
}

export const ERROR_TABLE: Readonly<Record<ErrorCode, ErrorCodeInfo>> = {
  INVALID_RULE: { exitStatus: 1, httpStatus: 400, protocolMessage: 'Invalid rendering rule.' },
  UNKNOWN_FUNCTION: { exitStatus: 1, httpStatus: 400, protocolMessage: 'Unknown raster function.' },
  INVALID_ARGUMENT: { exitStatus: 1, httpStatus: 400, protocolMessage: 'Invalid or missing input parameters.' },
  INVALID_FORMAT: { exitStatus: 1, httpStatus: 400, protocolMessage: 'Invalid format.' },
  UNSUPPORTED_INPUT: { exitStatus: 1, httpStatus: 400, protocolMessage: 'Unable to process the input raster.' },
  LIMIT_EXCEEDED: { exitStatus: 1, httpStatus: 400, protocolMessage: 'The request exceeds a size limit.' },
  IO_ERROR: { exitStatus: 1, httpStatus: 500, protocolMessage: 'Unable to read the input raster.' },
  HTTPS_REQUIRED: { exitStatus: 1, httpStatus: 403, protocolMessage: 'SSL Required' },
  METHOD_NOT_ALLOWED: { exitStatus: 1, httpStatus: 405, protocolMessage: 'Method not supported.' },
  INVALID_CREDENTIALS: { exitStatus: 1, httpStatus: 400, protocolMessage: 'Unable to generate token.' },
  TOKEN_REQUIRED: { exitStatus: 1, httpStatus: 499, protocolMessage: 'Token Required' },
  TOKEN_INVALID: { exitStatus: 1, httpStatus: 498, protocolMessage: 'Invalid token.' },
  TOKEN_EXPIRED: { exitStatus: 1, httpStatus: 498, protocolMessage: 'Invalid token.' },
  EXPIRATION_TOO_LONG: { exitStatus: 1, httpStatus: 400, protocolMessage: 'Unable to generate token.' },
  SERVER_NOT_REGISTERED: { exitStatus: 1, httpStatus: 400, protocolMessage: 'Unable to generate token.' },
  LOCATION_NOT_ACCESSIBLE: { exitStatus: 1, httpStatus: 500, protocolMessage: 'The location is not accessible.' },
  FORBIDDEN: {
    exitStatus: 1,
    httpStatus: 403,
    protocolMessage: 'You do not have permissions to access this resource or perform this operation.',
  },
  NOT_FOUND: { exitStatus: 1, httpStatus: 404, protocolMessage: 'Not found.' },
  CONFLICT: { exitStatus: 1, httpStatus: 409, protocolMessage: 'The operation conflicts with one in progress.' },
  TOO_MANY_ATTEMPTS: { exitStatus: 1, httpStatus: 429, protocolMessage: 'Unable to generate token.' },
  SERVER_BUSY: { exitStatus: 1, httpStatus: 503, protocolMessage: 'The server is busy. Try again later.' },
  TIMEOUT: { exitStatus: 1, httpStatus: 504, protocolMessage: 'The request took longer than the server allows.' },
  ABORTED: { exitStatus: 1, httpStatus: 499, protocolMessage: 'The request was cancelled.' },
  INTERNAL: { exitStatus: 1, httpStatus: 500, protocolMessage: 'Error performing the operation.' },
};

/** One problem (or warning) found in a rule: what, where, and why. Plain data, safe to postMessage. */
export interface Issue {
  readonly code: ErrorCode;
  /** JSON path into the rule, e.g. `rasterFunctionArguments.Raster.rasterFunctionArguments.ZFactor`. */
  readonly path: string;
  readonly message: string;
}

export interface EngineErrorOptions {
  readonly path?: string;
  readonly details?: readonly string[];
  /** Every problem found, when several were collected before throwing (rule validation). */
  readonly issues?: readonly Issue[];
  readonly cause?: unknown;
}

export class EngineError extends Error {
  override readonly name = 'EngineError';
  readonly code: ErrorCode;
  readonly path: string | undefined;
  readonly details: readonly string[];
  readonly issues: readonly Issue[];

  constructor(code: ErrorCode, message: string, options: EngineErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.path = options.path;
    this.details = options.details ?? [];
    this.issues = options.issues ?? [{ code, path: options.path ?? '', message }];
  }

  /** Plain JSON form (for CLIs, workers and protocol adapters). */
  toJSON(): { code: ErrorCode; message: string; path?: string; issues: readonly Issue[] } {
    return { code: this.code, message: this.message, ...(this.path ? { path: this.path } : {}), issues: this.issues };
  }
}

/** Several problems at once: the first one's code leads, every one is kept in `issues`. */
export function combinedError(issues: readonly Issue[]): EngineError {
  const first = issues[0];
  if (first === undefined) return new EngineError('INTERNAL', 'combinedError called without issues');
  const message =
    issues.length === 1 ? withPath(first) : `${issues.length} problems in the rule:\n${issues.map((i) => `  - ${withPath(i)}`).join('\n')}`;
  return new EngineError(first.code, message, { path: first.path, issues });
}

export const withPath = (i: Issue): string => (i.path ? `${i.path}: ${i.message}` : i.message);

export const invalidArgument = (path: string, message: string): EngineError => new EngineError('INVALID_ARGUMENT', message, { path });

export const unsupportedInput = (path: string, message: string): EngineError => new EngineError('UNSUPPORTED_INPUT', message, { path });

/** Turn anything thrown into an EngineError (unknown throwables become INTERNAL, cause kept). */
export function toEngineError(e: unknown): EngineError {
  if (e instanceof EngineError) return e;
  if (e instanceof Error && e.name === 'AbortError') return new EngineError('ABORTED', 'the request was aborted', { cause: e });
  return new EngineError('INTERNAL', e instanceof Error ? e.message : String(e), { cause: e });
}

/** Why a file write failed, in words an operator acts on (by errno code). */
const WRITE_CAUSES: Readonly<Record<string, string>> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is exhausted',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EIO: 'an input/output error occurred',
  EMFILE: 'too many open files',
  ENOENT: 'the folder does not exist',
  ENOTDIR: 'the path is not a folder',
};

/** The cause of a failed write and its errno code, e.g. "the disk is full (ENOSPC)"; else the error's message. */
export function writeCause(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const why = (code !== undefined && WRITE_CAUSES[code]) || (e instanceof Error ? e.message : String(e));
  return code !== undefined ? `${why} (${code})` : why;
}

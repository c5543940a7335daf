/**
 * SOAP faults of the map service (protocols.md §5.7, §5.8): every fault is HTTP 500 with
 * `text/xml; charset=utf-8`, `faultcode` `soap:Client` for bad input and authentication problems,
 * `soap:Server` for our own failures (whose message is the table's, never the error's: no internals,
 * no stack traces), and `detail` holding `tns:GeoError` with the `Code` and the `Details`.
 */
import { ERROR_TABLE, EngineError, toEngineError, withPath, type ErrorCode } from '../../core/errors.js';
import { SoapProtocolFault, soapDocument } from './envelope.js';
import { el } from './xml.js';

export type SoapFaultCode = 'Client' | 'Server' | 'VersionMismatch' | 'MustUnderstand';

export interface SoapFaultInfo {
  readonly faultcode: 'Client' | 'Server';
  /** `GeoError/Code`. */
  readonly code: number;
  /** `faultstring`: the error's own message, or the fixed message of ERROR_TABLE. */
  readonly message: 'own' | 'table';
}

/**
 * Every ErrorCode's fault (a `Record`, so a new code is a compile error until it is mapped here).
 * Decision: NOT_FOUND is code 400 (§5.8: an unknown map/layer/type is bad input, as in its example);
 * ABORTED (the caller went away) is a Client fault with code 400 — 499 would read as "Token Required".
 */
export const SOAP_FAULT_TABLE: Readonly<Record<ErrorCode, SoapFaultInfo>> = {
  INVALID_RULE: { faultcode: 'Client', code: 400, message: 'own' },
  UNKNOWN_FUNCTION: { faultcode: 'Client', code: 400, message: 'own' },
  INVALID_ARGUMENT: { faultcode: 'Client', code: 400, message: 'own' },
  INVALID_FORMAT: { faultcode: 'Client', code: 400, message: 'own' },
  UNSUPPORTED_INPUT: { faultcode: 'Client', code: 400, message: 'own' },
  LIMIT_EXCEEDED: { faultcode: 'Client', code: 400, message: 'own' },
  IO_ERROR: { faultcode: 'Server', code: 500, message: 'table' },
  HTTPS_REQUIRED: { faultcode: 'Client', code: 403, message: 'table' },
  METHOD_NOT_ALLOWED: { faultcode: 'Client', code: 405, message: 'table' },
  INVALID_CREDENTIALS: { faultcode: 'Client', code: 400, message: 'table' },
  TOKEN_REQUIRED: { faultcode: 'Client', code: 499, message: 'table' },
  TOKEN_INVALID: { faultcode: 'Client', code: 498, message: 'table' },
  TOKEN_EXPIRED: { faultcode: 'Client', code: 498, message: 'table' },
  EXPIRATION_TOO_LONG: { faultcode: 'Client', code: 400, message: 'table' },
  SERVER_NOT_REGISTERED: { faultcode: 'Client', code: 400, message: 'table' },
  LOCATION_NOT_ACCESSIBLE: { faultcode: 'Server', code: 500, message: 'table' },
  FORBIDDEN: { faultcode: 'Client', code: 403, message: 'table' },
  NOT_FOUND: { faultcode: 'Client', code: 400, message: 'own' },
  CONFLICT: { faultcode: 'Client', code: 409, message: 'own' },
  TOO_MANY_ATTEMPTS: { faultcode: 'Client', code: 429, message: 'table' },
  SERVER_BUSY: { faultcode: 'Server', code: 503, message: 'table' },
  TIMEOUT: { faultcode: 'Server', code: 504, message: 'table' },
  ABORTED: { faultcode: 'Client', code: 400, message: 'table' },
  INTERNAL: { faultcode: 'Server', code: 500, message: 'table' },
};

/** HTTP status of every fault (§5.7: the SOAP 1.1 rule). */
export const SOAP_FAULT_STATUS = 500;

export interface SoapFaultParts {
  readonly faultcode: SoapFaultCode;
  readonly faultstring: string;
  readonly code: number;
  readonly details: readonly string[];
}

/** Server faults whose details say which limit was met (the setting's name), as the REST errors do. */
export const SHOWN_SERVER_DETAILS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['SERVER_BUSY', 'TIMEOUT']);

/** What a fault says about anything thrown (unknown throwables are INTERNAL: a Server fault with the table's message). */
export function faultParts(thrown: unknown): SoapFaultParts {
  const e: EngineError = toEngineError(thrown);
  const info = SOAP_FAULT_TABLE[e.code];
  const faultcode: SoapFaultCode = e instanceof SoapProtocolFault ? e.faultcode : info.faultcode;
  const faultstring = info.message === 'own' && e.message.trim() !== '' ? e.message : ERROR_TABLE[e.code].protocolMessage;
  let details: string[];
  if (info.faultcode === 'Server') details = SHOWN_SERVER_DETAILS.has(e.code) ? [...e.details] : [];
  else if (e.details.length > 0) details = [...e.details];
  // A fixed-message fault (authentication, permission) does not show the error's own wording in its issues either.
  else if (info.message === 'table') details = [];
  else details = e.issues.map(withPath).filter((d) => d !== faultstring);
  return { faultcode, faultstring, code: info.code, details };
}

/** The fault answer (§5.8) for anything thrown: status 500 and the `soap:Fault` document. */
export function soapFault(thrown: unknown): { status: number; body: string } {
  const f = faultParts(thrown);
  const fault = el(
    'soap:Fault',
    null,
    el('faultcode', null, `soap:${f.faultcode}`),
    el('faultstring', null, f.faultstring),
    el(
      'detail',
      null,
      el(
        'tns:GeoError',
        null,
        el('Code', null, f.code),
        f.details.map((d) => el('Details', null, d)),
      ),
    ),
  );
  return { status: SOAP_FAULT_STATUS, body: soapDocument(fault) };
}

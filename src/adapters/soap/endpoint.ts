/**
 * The SOAP map service endpoint (protocols.md §5.1, §5.7, §5.9):
 * `{soap_url}/[<folder>/]<name>/MapServer` with `{soap_url}` = `/server/services`.
 *
 * - `GET …?wsdl` (key matched case-insensitively): the WSDL generated from the operation table,
 *   `soap:address` = this endpoint on the configured public origin (else the request's).
 * - `POST`: a SOAP 1.1 envelope, dispatched on the local name of the Body's first child; the answer
 *   is encoded from the same table. Faults are HTTP 500 (§5.7).
 * - Any other `GET`: 405 with `Allow: POST`; other methods: 405 as well.
 * - Tokens: `?token=` on the endpoint URL or the header carriers (§0.4); anonymous access is a
 *   per-service setting. A secured service's WSDL needs the token too (§5.9).
 * - Limits (the site's settings, limits.ts): an envelope larger than `maxBodyBytes` is a Client
 *   fault naming the setting; an operation runs under the request's time budget (`requestSignal`:
 *   `requestTimeoutMs`, or the client hanging up), which drawings, tiles and identifies watch, and
 *   ends with a Server fault TIMEOUT (code 504) when the budget is spent. A busy server (the tile
 *   queue full) is a Server fault with code 503 (HTTP 500, as every fault).
 */
import { EngineError } from '../../core/errors.js';
import { authenticate } from '../auth.js';
import { abortError, requestSignal } from '../limits.js';
import { optionalCaller, servicesAudiences } from '../image/access.js';
import { mapServicesOf, type MapServices } from '../map/service.js';
import { readBody, readParams, requireHttps, TransportError, type Route } from '../rest.js';
import { fromTrustedProxy, limitsOf, originOf, type SiteDeps } from '../site.js';
import { tokenFromRequest } from '../tokens.js';
import { decodeRequest, encodeResponseEnvelope } from './codec.js';
import { parseEnvelope, SOAP_CONTENT_TYPE } from './envelope.js';
import { soapFault } from './faults.js';
import type { SoapContext } from './operation.js';
import { operationByName, SOAP_OPERATIONS } from './operations.js';
import { wsdlDocument } from './wsdl.js';

/** The root of every SOAP service (`{soap_url}`). */
export const SOAP_ROOT = '/server/services';

export type SoapDeps = SiteDeps;

/** `folder` ('' for the root) and `name` of `/server/services/[folder/]name/MapServer`; undefined otherwise. */
export function soapServicePath(url: URL): { folder: string; name: string } | undefined {
  const path = url.pathname.replace(/\/+$/, '');
  if (!path.startsWith(`${SOAP_ROOT}/`)) return undefined;
  let parts: string[];
  try {
    parts = path
      .slice(SOAP_ROOT.length + 1)
      .split('/')
      .map(decodeURIComponent);
  } catch {
    return undefined;
  }
  if (parts.length < 2 || parts.length > 3 || parts[parts.length - 1] !== 'MapServer') return undefined;
  if (parts.some((p) => p === '' || p === '.' || p === '..')) return undefined;
  return parts.length === 3 ? { folder: parts[0]!, name: parts[1]! } : { folder: '', name: parts[0]! };
}

const xml = (status: number, body: string, headers: Record<string, string> = {}): Response =>
  new Response(body, { status, headers: { 'content-type': SOAP_CONTENT_TYPE, 'cache-control': 'no-store', ...headers } });

const faultResponse = (thrown: unknown): Response => {
  const f = soapFault(thrown);
  return xml(f.status, f.body);
};

const wantsWsdl = (url: URL): boolean => [...url.searchParams.keys()].some((k) => k.toLowerCase() === 'wsdl');

/** The request without its body: token parameters come from the query string and headers only. */
const paramsOnly = (req: Request): Request => new Request(req.url, { method: 'GET', headers: req.headers });

/**
 * The WSDL of a service at an endpoint, generated once: it depends only on the two (the operation
 * table is fixed), and generating it takes ~150 ms. At most 64 are kept (oldest dropped).
 */
const wsdlCache = new Map<string, string>();
function wsdlFor(serviceName: string, endpoint: string): string {
  const key = `${serviceName}\n${endpoint}`;
  let doc = wsdlCache.get(key);
  if (doc === undefined) {
    doc = wsdlDocument({ serviceName, endpoint, operations: SOAP_OPERATIONS });
    if (wsdlCache.size >= 64) wsdlCache.delete(wsdlCache.keys().next().value!);
    wsdlCache.set(key, doc);
  }
  return doc;
}

/** The envelope, at most `maxBytes` (the site's maxBodyBytes): beyond it a LIMIT_EXCEEDED Client fault naming the setting. */
async function readEnvelopeBody(req: Request, maxBytes: number): Promise<Uint8Array> {
  try {
    return await readBody(req, maxBytes);
  } catch (e) {
    if (e instanceof TransportError && e.code === 'LIMIT_EXCEEDED') {
      const message = `The request is larger than ${maxBytes} bytes, the most the server accepts (maxBodyBytes).`;
      throw new EngineError('LIMIT_EXCEEDED', message, { path: 'maxBodyBytes', details: [message] });
    }
    throw e;
  }
}

/** The handler of every SOAP map service endpoint. */
export function soapHandler(deps: SoapDeps, services: MapServices = mapServicesOf(deps)) {
  const limits = limitsOf(deps.config);
  return async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const wsdl = req.method === 'GET' && wantsWsdl(url);
    if (req.method !== 'POST' && !wsdl) {
      return new Response(null, { status: 405, headers: { allow: 'POST', 'cache-control': 'no-store' } });
    }
    // The time budget runs from the request's arrival; the client hanging up aborts it too.
    const budget = requestSignal(req, limits);
    try {
      requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
      const where = soapServicePath(url);
      const record = where ? await deps.store.getService(`${where.folder ? `${where.folder}/` : ''}${where.name}.MapServer`) : undefined;
      const params = await readParams(paramsOnly(req));
      // Decision (as the image service): the token is checked before a missing service is reported.
      const caller =
        record?.properties['anonymous'] === true
          ? await optionalCaller(deps, req, params)
          : await authenticate(deps, req, { audiences: servicesAudiences(req, deps), shape: 'sharing', params });
      const service = where && record ? await services.open(where.folder, where.name) : undefined;
      if (!where || !service) {
        const what = where ? `${where.folder ? `${where.folder}/` : ''}${where.name}` : url.pathname;
        throw new EngineError('NOT_FOUND', `Service ${what}/MapServer not found.`, { path: 'url' });
      }
      const origin = originOf(req, deps.config);
      const endpoint = `${origin}${url.pathname.replace(/\/+$/, '')}`;
      if (wsdl) {
        return xml(200, wsdlFor(where.name, endpoint));
      }
      const body = await readEnvelopeBody(req, limits.maxBodyBytes);
      const envelope = parseEnvelope(body, req.headers.get('content-type'), limits.maxBodyBytes);
      const op = operationByName(envelope.operation);
      if (!op) throw new EngineError('INVALID_ARGUMENT', `Unknown operation '${envelope.operation}'.`, { path: envelope.operation });
      const args = decodeRequest(op, envelope.request);
      const mapName = args['MapName'];
      if (typeof mapName === 'string' && mapName !== service.mapName) {
        throw new EngineError('NOT_FOUND', `Map '${mapName}' does not exist in this service (its map is '${service.mapName}').`, {
          path: 'MapName',
        });
      }
      let token: string | undefined;
      if (caller) {
        try {
          token = tokenFromRequest(req, { headerAlias: deps.config.headerAlias, params });
        } catch {
          token = undefined;
        }
      }
      const ctx: SoapContext = {
        deps,
        service,
        request: req,
        signal: budget.signal,
        endpoint,
        origin,
        ...(token !== undefined && record?.properties['anonymous'] !== true ? { token } : {}),
      };
      const result = await op.handler(ctx, args);
      return xml(200, encodeResponseEnvelope(op, result));
    } catch (thrown) {
      // Work stopped by the budget says why (engines throw a plain ABORTED): TIMEOUT when the time ran out.
      const e = budget.signal.aborted && thrown instanceof EngineError && thrown.code === 'ABORTED' ? abortError(budget.signal) : thrown;
      if (e instanceof EngineError && (e.code === 'INTERNAL' || e.code === 'IO_ERROR')) deps.log.warn(`soap ${url.pathname}: ${e.message}`);
      return faultResponse(e);
    } finally {
      budget.dispose();
    }
  };
}

/** The SOAP map service routes (`/server/services/[folder/]name/MapServer`, every method). */
export function soapRoutes(deps: SoapDeps, services: MapServices = mapServicesOf(deps)): Route[] {
  const handler = soapHandler(deps, services);
  return [
    { method: 'ALL', path: `${SOAP_ROOT}/:name/MapServer`, handler },
    { method: 'ALL', path: `${SOAP_ROOT}/:folder/:name/MapServer`, handler },
  ];
}

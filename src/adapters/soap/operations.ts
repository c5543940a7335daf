/**
 * The one table of the SOAP map service: every operation's signature (signatures.ts: request and
 * response elements, the source of the WSDL, the decoder and the encoder) joined with its handler.
 * Adding an operation is a signature entry and a handler; a signature without a handler (or a
 * handler without a signature) fails at start-up and in the tests.
 */
import { EngineError } from '../../core/errors.js';
import { cacheHandlers } from './ops/cache.js';
import { classHandlers } from './ops/classes.js';
import { drawHandlers } from './ops/draw.js';
import { identifyHandlers } from './ops/identify.js';
import { infoHandlers } from './ops/info.js';
import { queryHandlers } from './ops/query.js';
import type { SoapHandler, SoapOperation } from './operation.js';
import { OPERATION_SIGNATURES } from './signatures.js';

const HANDLER_FAMILIES: readonly Readonly<Record<string, SoapHandler>>[] = [
  infoHandlers,
  drawHandlers,
  cacheHandlers,
  queryHandlers,
  identifyHandlers,
  classHandlers,
];

function join(): SoapOperation[] {
  const handlers = new Map<string, SoapHandler>();
  for (const family of HANDLER_FAMILIES) {
    for (const [name, handler] of Object.entries(family)) {
      if (handlers.has(name)) throw new EngineError('INTERNAL', `SOAP operation ${name} has two handlers`);
      handlers.set(name, handler);
    }
  }
  const ops = OPERATION_SIGNATURES.map((sig) => {
    const handler = handlers.get(sig.name);
    if (!handler) throw new EngineError('INTERNAL', `SOAP operation ${sig.name} has no handler`);
    handlers.delete(sig.name);
    return { ...sig, handler };
  });
  if (handlers.size > 0) throw new EngineError('INTERNAL', `handlers without a signature: ${[...handlers.keys()].join(', ')}`);
  return ops;
}

/** Every operation, in the order of the schema (the WSDL lists them in this order). */
export const SOAP_OPERATIONS: readonly SoapOperation[] = join();

const BY_NAME = new Map(SOAP_OPERATIONS.map((o) => [o.name, o]));

/** The operation of a request's wrapper element (local name, exact case). */
export const operationByName = (name: string): SoapOperation | undefined => BY_NAME.get(name);

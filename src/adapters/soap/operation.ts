/**
 * The contract between the SOAP map service's dispatcher and its operations.
 *
 * One table (`SOAP_OPERATIONS` in operations.ts) lists every operation once: its request elements,
 * its response elements and its handler. The WSDL, the request decoder and the response encoder are
 * all generated from that table and the type table (schema.ts): adding an operation is one entry.
 *
 * Values crossing this contract (decoded requests, handler results) are plain JS:
 * - complex values are objects whose keys are the schema's element names (PascalCase, exactly as in
 *   the schema) and whose `$type` is the concrete schema type (`EnvelopeN`, `PointN`, `MapExtent`,
 *   `RgbColor`, ...). The decoder always sets `$type` (from `xsi:type`, or inferred for abstract
 *   types); the encoder writes `xsi:type` from `$type`, else from the declared type;
 * - `ArrayOf<X>` values are JS arrays of their items;
 * - int/short/unsignedByte/long/double -> number; boolean -> boolean; string and enumerations ->
 *   string (`geoImagePNG`); dateTime -> Date; base64Binary -> Uint8Array;
 * - an absent optional element is `undefined`; a missing required value-type element is decoded as
 *   its schema default (0, false, '');
 * - `xs:anyType` slots hold `null`, a scalar (encoded as xs:string / xs:int for 32-bit integers /
 *   xs:double / xs:boolean / xs:dateTime / xs:base64Binary) or a complex object with `$type`;
 *   `{ $xs: 'double', value: 2 }` forces the XML Schema type of a scalar.
 */
import type { SiteDeps } from '../site.js';
import type { MapService } from '../map/model.js';

export type SoapScalar = string | number | boolean | Date | Uint8Array;
export interface SoapObject {
  readonly $type?: string;
  readonly [element: string]: SoapValue;
}
/** An explicitly typed scalar in an `xs:anyType` slot. */
export interface XsValue {
  readonly $xs: 'string' | 'int' | 'short' | 'long' | 'double' | 'float' | 'boolean' | 'dateTime' | 'base64Binary';
  readonly value: SoapScalar;
}
export type SoapValue = SoapScalar | SoapObject | XsValue | readonly SoapValue[] | null | undefined;

/** A request or response element of an operation (global wrapper element's child). */
export interface ElementDecl {
  readonly name: string;
  /** Schema type: `xs:int`, `xs:string`, `xs:boolean`, `xs:double`, `xs:base64Binary`, or a type of the type table. */
  readonly type: string;
  /** minOccurs 0 (the seed's "(opt)"). */
  readonly optional?: boolean;
}

/** Everything an operation needs besides its decoded request. */
export interface SoapContext {
  readonly deps: SiteDeps;
  /** The opened map service the request is addressed to. */
  readonly service: MapService;
  readonly request: Request;
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal;
  /** The endpoint's public URL (what the WSDL's `soap:address` says), without query. */
  readonly endpoint: string;
  /** Origin for URLs in answers (output images, virtual cache directory). */
  readonly origin: string;
  /** The token the call carried, when the service is secured (URLs in answers append it). */
  readonly token?: string;
}

/** The decoded request: element name -> value. */
export type SoapArgs = Readonly<Record<string, SoapValue>>;

/** The response elements by name: `{ Result: ... }` for all operations but FromMapPoints. */
export type SoapResult = Readonly<Record<string, SoapValue>>;

/** An operation's request and response elements: the single source of the WSDL, the decoder and the encoder. */
export interface OperationSignature {
  readonly name: string;
  readonly request: readonly ElementDecl[];
  /** Response elements; `[{ name: 'Result', type }]` for every operation but FromMapPoints. */
  readonly response: readonly ElementDecl[];
}

/** An operation's implementation: the decoded request in, the response elements out. */
export type SoapHandler = (ctx: SoapContext, args: SoapArgs) => Promise<SoapResult>;

export interface SoapOperation extends OperationSignature {
  readonly handler: SoapHandler;
}

/** The response of an operation answering one `Result`. */
export const result = (value: SoapValue): SoapResult => ({ Result: value });

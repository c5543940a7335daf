/**
 * The map service's WSDL 1.1 document (protocols.md §5.1), generated from the type table
 * (schema.ts) and the operation signatures: document/literal wrapped, the vendor's layout and names
 * (`e`/`xs`/`soap` prefixes, one `xs:schema` without `elementFormDefault`, `<Op>In`/`<Op>Out`
 * messages with part `parameters`, `MapServerPort`, `MapServerBinding`, `soapAction=""`, no faults).
 */
import { GEO_SOAP_NS, XS_NS } from './envelope.js';
import type { ElementDecl, OperationSignature } from './operation.js';
import { COMPLEX_TYPES, ENUMERATIONS, type FieldDecl } from './schema.js';
import { el, type XmlFragment } from './xml.js';

export const WSDL_NS = 'http://schemas.xmlsoap.org/wsdl/';
export const WSDL_SOAP_NS = 'http://schemas.xmlsoap.org/wsdl/soap/';
export const SOAP_HTTP_TRANSPORT = 'http://schemas.xmlsoap.org/soap/http';

export interface WsdlOptions {
  /** The service's name without its folder (`<name>_MapServer`). */
  readonly serviceName: string;
  /** The endpoint URL clients call (`soap:address location`). */
  readonly endpoint: string;
  readonly operations: readonly OperationSignature[];
}

/** A type reference: `xs:` built-ins as they are, table types through the `e` prefix. */
const ref = (type: string): string => (type.startsWith('xs:') ? type : `e:${type}`);

function elementDecl(fd: FieldDecl): XmlFragment {
  return el('xs:element', {
    minOccurs: fd.minOccurs === 0 ? '0' : null,
    maxOccurs: fd.maxOccurs === 'unbounded' ? 'unbounded' : null,
    name: fd.name,
    nillable: fd.nillable ? 'true' : null,
    default: fd.default ?? null,
    type: ref(fd.type),
  });
}

const fieldOf = (d: ElementDecl): FieldDecl => ({
  name: d.name,
  type: d.type,
  minOccurs: d.optional ? 0 : 1,
  maxOccurs: 1,
  nillable: false,
});

/** A wrapper element `<Op>` / `<Op>Response`: a global element whose anonymous type is the sequence of its parts. */
function wrapper(name: string, parts: readonly ElementDecl[]): XmlFragment {
  return el(
    'xs:element',
    { name },
    el(
      'xs:complexType',
      null,
      parts.length === 0
        ? null
        : el(
            'xs:sequence',
            null,
            parts.map((p) => elementDecl(fieldOf(p))),
          ),
    ),
  );
}

/** The `xs:schema` of the types section: wrapper elements, complex types, enumerations. */
function schema(operations: readonly OperationSignature[]): XmlFragment {
  const wrappers = operations.flatMap((op) => [wrapper(op.name, op.request), wrapper(`${op.name}Response`, op.response)]);
  const complex = COMPLEX_TYPES.map((c) => {
    const sequence = c.fields.length === 0 ? null : el('xs:sequence', null, c.fields.map(elementDecl));
    const attrs = { name: c.name, abstract: c.abstract ? 'true' : null };
    if (c.base === undefined) return el('xs:complexType', attrs, sequence);
    return el('xs:complexType', attrs, el('xs:complexContent', null, el('xs:extension', { base: ref(c.base) }, sequence)));
  });
  const simple = ENUMERATIONS.map((e) =>
    el(
      'xs:simpleType',
      { name: e.name },
      el(
        'xs:restriction',
        { base: 'xs:string' },
        e.values.map((v) => el('xs:enumeration', { value: v })),
      ),
    ),
  );
  // No elementFormDefault: local elements are unqualified (§5.1).
  return el('xs:schema', { xmlns: GEO_SOAP_NS, targetNamespace: GEO_SOAP_NS }, wrappers, complex, simple);
}

/** The WSDL document served at `<endpoint>?wsdl` (§5.1). */
export function wsdlDocument(options: WsdlOptions): string {
  const { serviceName, endpoint, operations } = options;
  const messages = operations.flatMap((op) => [
    el('message', { name: `${op.name}In` }, el('part', { name: 'parameters', element: `e:${op.name}` })),
    el('message', { name: `${op.name}Out` }, el('part', { name: 'parameters', element: `e:${op.name}Response` })),
  ]);
  const portType = el(
    'portType',
    { name: 'MapServerPort' },
    operations.map((op) =>
      el('operation', { name: op.name }, el('input', { message: `e:${op.name}In` }), el('output', { message: `e:${op.name}Out` })),
    ),
  );
  const body = el('soap:body', { use: 'literal' });
  const binding = el(
    'binding',
    { name: 'MapServerBinding', type: 'e:MapServerPort' },
    el('soap:binding', { transport: SOAP_HTTP_TRANSPORT }),
    operations.map((op) =>
      el(
        'operation',
        { name: op.name },
        el('soap:operation', { soapAction: '', style: 'document' }),
        el('input', null, body),
        el('output', null, body),
      ),
    ),
  );
  const service = el(
    'service',
    { name: `${serviceName}_MapServer` },
    el('port', { name: 'MapServerPort', binding: 'e:MapServerBinding' }, el('soap:address', { location: endpoint })),
  );
  const definitions = el(
    'definitions',
    { 'xmlns:e': GEO_SOAP_NS, 'xmlns:soap': WSDL_SOAP_NS, 'xmlns:xs': XS_NS, targetNamespace: GEO_SOAP_NS, xmlns: WSDL_NS },
    el('types', null, schema(operations)),
    messages,
    portType,
    binding,
    service,
  );
  return `<?xml version="1.0" encoding="utf-8"?>\n${definitions.xml}`;
}

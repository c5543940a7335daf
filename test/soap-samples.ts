/**
 * Sample values of the SOAP type table for tests: a value of any table or `xs:` type with every
 * required element filled (and every optional one near the top), following operation.ts's JS
 * conventions (`$type` on every complex value, JS arrays for `ArrayOf` types).
 */
import type { SoapValue } from '../src/adapters/soap/operation.js';
import { allFields, arrayItem, complexType, derivedTypes, enumeration } from '../src/adapters/soap/schema.js';

/** A value of `type`; `depth` counts the levels above (optional elements are filled above depth 2, arrays hold one item above depth 4). */
export function sampleValue(type: string, depth = 0): SoapValue {
  switch (type) {
    case 'xs:int':
    case 'xs:long':
      return -7;
    case 'xs:short':
      return 300;
    case 'xs:unsignedByte':
      return 254;
    case 'xs:double':
      return 1.25;
    case 'xs:boolean':
      return true;
    case 'xs:string':
      return 's & <t>';
    case 'xs:dateTime':
      return new Date(Date.UTC(2021, 2, 3, 4, 5, 6, 7));
    case 'xs:base64Binary':
      return new Uint8Array([1, 2, 250]);
    case 'xs:anyType':
      return 'any';
  }
  const en = enumeration(type);
  if (en !== undefined) return en.values.at(-1)!;
  const item = arrayItem(type);
  if (item !== undefined) return depth > 3 ? [] : [sampleValue(item.type, depth + 1)];
  const decl = complexType(type);
  if (decl === undefined) throw new Error(`no type ${type}`);
  const concrete = decl.abstract ? derivedTypes(type).find((t) => !complexType(t)!.abstract)! : type;
  const out: Record<string, SoapValue> = { $type: concrete };
  for (const f of allFields(concrete)) if (f.minOccurs === 1 || depth < 2) out[f.name] = sampleValue(f.type, depth + 1);
  return out;
}

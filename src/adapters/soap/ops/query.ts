/**
 * The query operations of the SOAP map service (seed §7): feature and row queries (count, ids, data
 * and their "2" / MapTableDescription forms), related records, statistics, attachments and HTML
 * popups, over the feature store of the map model.
 *
 * - `MapName` must be the service's map name; unknown layer, table, relationship, row or attachment
 *   ids are NOT_FOUND; raster layers have no rows (INVALID_ARGUMENT).
 * - maxRecordCount: data answers hold at most the service's maxRecordCount rows — the vendor
 *   truncates there; JSON answers then say `exceededTransferLimit: true`. Counts and id lists are
 *   not limited (the vendor's are not either).
 */
import { EngineError, invalidArgument } from '../../../core/errors.js';
import { mapOutputsOf, outputUrl } from '../../map/outputs.js';
import { compileWhere } from '../../map/where.js';
import { serviceKey } from '../../site.js';
import type { AttributeValue, FeatureRow, FieldInfo, MapRelationship, StatisticRequest, StatisticType } from '../../map/model.js';
import { isObject } from '../display.js';
import { result, type SoapArgs, type SoapContext, type SoapHandler, type SoapObject, type SoapValue } from '../operation.js';
import {
  allFieldsOf,
  fieldList,
  fieldNamed,
  geometryShapingOf,
  outputGeometry,
  parseQueryFilter,
  type GeometryShaping,
  type ParsedQueryFilter,
  type QueryTarget,
} from '../query-filter.js';
import {
  featureJson,
  featureSetJson,
  fieldJson,
  kmlOf,
  queryResultOf,
  recordSetOf,
  soapFieldsOf,
  soapRecordOf,
  spatialReferenceJson,
  type FeatureSetData,
  type PublishOutput,
} from '../record-set.js';
import { optionalSpatialReference } from '../spatial-reference.js';

// ---------------------------------------------------------------------------------------------
// Map, layers and tables

const notFound = (path: string, message: string): EngineError => new EngineError('NOT_FOUND', message, { path });

function checkMapName(ctx: SoapContext, args: SoapArgs): void {
  const name = typeof args['MapName'] === 'string' ? args['MapName'] : '';
  if (name !== ctx.service.mapName) {
    throw notFound('MapName', `Map '${name}' does not exist in this service (its map is '${ctx.service.mapName}').`);
  }
}

const intOf = (v: SoapValue, path: string): number => {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw invalidArgument(path, `${path} must be an integer.`);
  return v;
};

/** A feature layer or standalone table by id; `what` words the not-found message. */
function targetById(ctx: SoapContext, id: SoapValue, path: string, what: 'Layer' | 'Table'): QueryTarget {
  const n = intOf(id, path);
  const item = ctx.service.byId(n);
  if (item === undefined) throw notFound(path, `${what} ${n} does not exist in map '${ctx.service.mapName}'.`);
  if (item.kind === 'raster') {
    throw invalidArgument(path, `Layer ${n} ('${item.name}') is a raster layer: it has no features or rows to query.`);
  }
  return item;
}

interface Described {
  readonly target: QueryTarget;
  readonly definitionExpression?: string;
  /** LayerResultOptions/IncludeGeometry (default true). */
  readonly includeGeometry: boolean;
  /** LayerResultOptions/GeometryResultOptions. */
  readonly shaping?: GeometryShaping;
  readonly path: string;
}

/** A LayerDescription or StandaloneTableDescription (by `$type`; without one, by its id element). */
function describedTarget(ctx: SoapContext, desc: SoapValue, path: string): Described {
  if (!isObject(desc)) throw invalidArgument(path, `${path} is required.`);
  const isTable = desc.$type === 'StandaloneTableDescription' || (desc.$type !== 'LayerDescription' && desc['ID'] !== undefined);
  const target = isTable
    ? targetById(ctx, desc['ID'], `${path}/ID`, 'Table')
    : targetById(ctx, desc['LayerID'], `${path}/LayerID`, 'Layer');
  if (isTable && target.kind !== 'table') {
    throw invalidArgument(`${path}/ID`, `${path}/ID: ${target.id} is a layer; describe it with a LayerDescription.`);
  }
  if (!isTable && target.kind === 'table') {
    throw invalidArgument(
      `${path}/LayerID`,
      `${path}/LayerID: ${target.id} is a standalone table; describe it with a StandaloneTableDescription.`,
    );
  }
  const def = typeof desc['DefinitionExpression'] === 'string' ? desc['DefinitionExpression'].trim() : '';
  // Checked here for every operation (popups and related records use it too), so faults name it.
  compileWhere(def, target.table.fields, { path: `${path}/DefinitionExpression` });
  const lro = desc['LayerResultOptions'];
  const includeGeometry = !(isObject(lro) && lro['IncludeGeometry'] === false);
  const shaping = isObject(lro) ? geometryShapingOf(lro['GeometryResultOptions'], `${path}/LayerResultOptions/GeometryResultOptions`) : {};
  return { target, includeGeometry, shaping, path, ...(def !== '' ? { definitionExpression: def } : {}) };
}

/** The query of a request: the filter parsed for the target, geometry dropped when not wanted. */
function queryOf(
  ctx: SoapContext,
  d: Pick<Described, 'target' | 'definitionExpression' | 'includeGeometry' | 'path'>,
  filter: SoapValue,
): ParsedQueryFilter {
  const p = parseQueryFilter(
    filter,
    d.target,
    ctx.service,
    d.definitionExpression !== undefined
      ? { definitionExpression: d.definitionExpression, definitionPath: `${d.path}/DefinitionExpression` }
      : {},
  );
  if (d.includeGeometry || !p.returnGeometry) return p;
  return {
    ...p,
    returnGeometry: false,
    fields: p.fields.filter((f) => f.type !== 'geoFieldTypeGeometry'),
    query: { ...p.query, returnGeometry: false },
  };
}

/**
 * Answers by URL (…AsURL formats, attachments with geoTransportTypeUrl) are written to the site's
 * map outputs and served by its output route, as map images are: unguessable names, expiring, the
 * caller's token on a secured service's URLs.
 */
function publisherOf(ctx: SoapContext): PublishOutput {
  return async (bytes, extension, contentType) => {
    const owner = {
      service: serviceKey({ folder: ctx.service.folder, serviceName: ctx.service.serviceName, type: 'MapServer' }),
      secured: ctx.token !== undefined,
    };
    const rec = await mapOutputsOf(ctx.deps).put(bytes, extension, owner, contentType);
    return outputUrl(ctx.origin, rec.name, ctx.token);
  };
}

// ---------------------------------------------------------------------------------------------
// Rows

const DISTINCT_COUNT = 'DISTINCT_ROW_COUNT';

/** Distinct combinations of the output attribute fields (PrefixClause DISTINCT), as rows without ids. */
async function distinctRows(t: QueryTarget, p: ParsedQueryFilter): Promise<FeatureRow[]> {
  const names = p.fields.map((f) => f.name);
  const groups = await t.table.statistics(
    { ...p.query, outFields: names },
    [{ field: t.table.objectIdField, type: 'count', outName: DISTINCT_COUNT }],
    names,
    p.query.orderBy ?? names.map((field) => ({ field, descending: false })),
  );
  return groups.map((g) => ({ id: 0, attributes: Object.fromEntries(names.map((n) => [n, g[n] ?? null])) }));
}

/** The rows of a data query (at most maxRecordCount), geometries in the output SR. */
async function rowsOf(
  ctx: SoapContext,
  t: QueryTarget,
  p: ParsedQueryFilter,
  shaping: GeometryShaping = {},
): Promise<{ rows: FeatureRow[]; exceeded: boolean }> {
  const max = ctx.service.maxRecordCount;
  const all = p.distinct ? await distinctRows(t, p) : await t.table.query({ ...p.query, limit: max + 1 });
  const exceeded = all.length > max;
  const rows = exceeded ? all.slice(0, max) : all;
  if (!p.returnGeometry) return { rows, exceeded };
  const mapSr = ctx.service.spatialReference;
  return {
    rows: rows.map((r) => (r.geometry ? { ...r, geometry: outputGeometry(r.geometry, mapSr, p.outSr, p.resolution, shaping) } : r)),
    exceeded,
  };
}

function featureSetOf(t: QueryTarget, p: ParsedQueryFilter, rows: FeatureRow[], exceeded: boolean): FeatureSetData {
  return {
    fields: p.fields,
    rows,
    geometryType: t.table.geometryType,
    spatialReference: p.outSr,
    objectIdField: t.table.objectIdField,
    displayField: t.displayField,
    name: t.name,
    ...(exceeded ? { exceededTransferLimit: true } : {}),
  };
}

async function countOf(t: QueryTarget, p: ParsedQueryFilter): Promise<number> {
  if (!p.distinct) return t.table.count(p.query);
  return (await distinctRows(t, p)).length;
}

// Decision: DISTINCT does not apply to id lists (every id is distinct).
const idsOf = (t: QueryTarget, p: ParsedQueryFilter): Promise<number[]> => t.table.ids(p.query);

async function recordSet(ctx: SoapContext, t: QueryTarget, p: ParsedQueryFilter): Promise<SoapObject> {
  const { rows, exceeded } = await rowsOf(ctx, t, p);
  return recordSetOf(featureSetOf(t, p, rows, exceeded));
}

/** A QueryResult in the QueryResultOptions' format (missing format = RecordSetAsObject). */
async function queryResult(ctx: SoapContext, d: Described, p: ParsedQueryFilter, options: SoapValue): Promise<SoapObject> {
  const t = d.target;
  const format =
    isObject(options) && typeof options['Format'] === 'string' && options['Format'] !== ''
      ? options['Format']
      : 'geoQueryResultRecordSetAsObject';
  const { rows, exceeded } = await rowsOf(ctx, t, p, d.shaping);
  const data = featureSetOf(t, p, rows, exceeded);
  return queryResultOf(
    format,
    'QueryResultOptions/Format',
    { object: () => recordSetOf(data), json: () => featureSetJson(data), kml: () => kmlOf(data) },
    publisherOf(ctx),
  );
}

// ---------------------------------------------------------------------------------------------
// Related records

/** The relationship and the two sides' keys, seen from `source`. */
function relationshipOf(
  ctx: SoapContext,
  source: QueryTarget,
  id: SoapValue,
  path: string,
): { rel: MapRelationship; sourceKey: string; related: QueryTarget; relatedKey: string } {
  const n = intOf(id, path);
  const rel = ctx.service.relationships.find((r) => r.id === n && (r.origin === source.id || r.destination === source.id));
  if (rel === undefined)
    throw notFound(path, `Relationship ${n} does not exist for '${source.name}' (id ${source.id}) in map '${ctx.service.mapName}'.`);
  const fromOrigin = rel.origin === source.id;
  const relatedId = fromOrigin ? rel.destination : rel.origin;
  return {
    rel,
    sourceKey: fromOrigin ? rel.originKey : rel.destinationKey,
    related: targetById(ctx, relatedId, path, 'Table'),
    relatedKey: fromOrigin ? rel.destinationKey : rel.originKey,
  };
}

/** Keys per store query (the store binds them as one JSON parameter, never as SQL text). */
const KEY_CHUNK = 5000;

async function relatedRecords(
  ctx: SoapContext,
  source: QueryTarget,
  sourceDef: string | undefined,
  fidSet: SoapValue,
  rd: SoapValue,
): Promise<SoapObject> {
  if (!isObject(rd)) throw invalidArgument('RelateDescription', 'RelateDescription is required.');
  const { sourceKey, related, relatedKey } = relationshipOf(ctx, source, rd['RelationshipID'], 'RelateDescription/RelationshipID');
  const fids =
    isObject(fidSet) && Array.isArray(fidSet['FIDArray'])
      ? (fidSet['FIDArray'] as SoapValue[]).filter((v): v is number => typeof v === 'number')
      : [];

  // The source rows (those of the FIDSet that exist and pass the source's definition expression).
  const srcFields = allFieldsOf(source.table);
  const sk = fieldNamed(srcFields, sourceKey);
  const rk = fieldNamed(allFieldsOf(related.table), relatedKey);
  if (sk === undefined || rk === undefined)
    throw new EngineError('INTERNAL', `relationship keys ${sourceKey}/${relatedKey} are not fields of their tables`);
  const sources =
    fids.length === 0
      ? []
      : await source.table.query({
          objectIds: fids,
          outFields: [...new Set([source.table.objectIdField, sk.name])],
          returnGeometry: false,
          limit: fids.length,
          path: 'SourceFIDSet',
          ...(sourceDef !== undefined ? { where: sourceDef } : {}),
        });

  // The related rows whose key is one of the sources' keys, AND the related table's definition expression.
  const outFields = typeof rd['RelatedTableFields'] === 'string' ? rd['RelatedTableFields'] : '';
  const includeGeometry = rd['IncludeGeometry'] !== false;
  const subFields = outFields.trim() === '' || outFields.trim() === '*' ? '*' : outFields;
  const relDef = typeof rd['RelatedTableDefinitionExpression'] === 'string' ? rd['RelatedTableDefinitionExpression'] : '';
  compileWhere(relDef, related.table.fields, { path: 'RelateDescription/RelatedTableDefinitionExpression' });
  const p0 = parseQueryFilter({ $type: 'QueryFilter', SubFields: subFields, WhereClause: '' }, related, ctx.service, {
    path: 'RelateDescription',
  });
  const withKey = p0.query.outFields!.includes(rk.name) ? p0.query.outFields! : [...p0.query.outFields!, rk.name];
  const returnGeometry = includeGeometry && p0.returnGeometry;
  const fields = p0.fields.filter((f) => returnGeometry || f.type !== 'geoFieldTypeGeometry');
  const shaping = geometryShapingOf(rd['GeometryResultOptions'], 'RelateDescription/GeometryResultOptions');
  const outSr =
    optionalSpatialReference(rd['OutputSpatialReference'], 'RelateDescription/OutputSpatialReference') ?? ctx.service.spatialReference;

  const keys = [...new Set(sources.map((s) => s.attributes[sk.name] ?? null).filter((k) => k !== null))];
  const max = ctx.service.maxRecordCount;
  const found: FeatureRow[] = [];
  for (let i = 0; i < keys.length && found.length <= max; i += KEY_CHUNK) {
    found.push(
      ...(await related.table.query({
        fieldIn: { field: rk.name, values: keys.slice(i, i + KEY_CHUNK) },
        outFields: withKey,
        returnGeometry,
        limit: max + 1 - found.length,
        path: 'RelateDescription',
        orderBy: [{ field: related.table.objectIdField, descending: false }],
        ...(relDef.trim() !== '' ? { where: relDef } : {}),
      })),
    );
  }
  const exceeded = found.length > max;
  const relRows = (exceeded ? found.slice(0, max) : found).map((r) =>
    returnGeometry && r.geometry ? { ...r, geometry: outputGeometry(r.geometry, ctx.service.spatialReference, outSr, 0, shaping) } : r,
  );

  // Decision: one group per source row that has related rows (the REST API's relatedRecordGroups),
  // in the order of the source FIDSet; the key compared as the store returns it.
  const byKey = new Map<string, FeatureRow[]>();
  for (const r of relRows) {
    const k = JSON.stringify(r.attributes[rk.name] ?? null);
    const list = byKey.get(k);
    if (list) list.push(r);
    else byKey.set(k, [r]);
  }
  const srcById = new Map(sources.map((s) => [s.id, s]));
  const groups = [...new Set(fids)]
    .map((id) => srcById.get(id))
    .filter((s): s is FeatureRow => s !== undefined)
    .map((s) => ({ id: s.id, rows: byKey.get(JSON.stringify(s.attributes[sk.name] ?? null)) ?? [] }))
    .filter((g) => g.rows.length > 0);

  const data: FeatureSetData = {
    fields,
    rows: relRows,
    geometryType: related.table.geometryType,
    spatialReference: outSr,
    objectIdField: related.table.objectIdField,
    displayField: related.displayField,
    name: related.name,
  };
  const format =
    typeof rd['ResultFormat'] === 'string' && rd['ResultFormat'] !== '' ? rd['ResultFormat'] : 'geoRelateResultRelatedRecordSetAsObject';
  const object = (): SoapObject => ({
    $type: 'RelatedRecordSet',
    RelatedRecordFields: soapFieldsOf(data),
    RelatedRecordGroups: groups.map((g) => ({
      $type: 'RelatedRecordGroup',
      SourceRowID: g.id,
      Records: g.rows.map((r) => soapRecordOf(data, r)),
    })),
  });
  const json = (): unknown => {
    const withGeometry = returnGeometry && related.table.geometryType !== null;
    const fs = featureSetJson(data);
    return {
      ...(withGeometry ? { geometryType: fs['geometryType'], spatialReference: spatialReferenceJson(outSr) } : {}),
      fields: fields.filter((f) => f.type !== 'geoFieldTypeGeometry').map(fieldJson),
      relatedRecordGroups: groups.map((g) => ({ objectId: g.id, relatedRecords: g.rows.map((r) => featureJson(data, r)) })),
      ...(exceeded ? { exceededTransferLimit: true } : {}),
    };
  };
  return queryResultOf(format, 'RelateDescription/ResultFormat', { object, json }, publisherOf(ctx));
}

// ---------------------------------------------------------------------------------------------
// Statistics

const STAT_TYPES: Readonly<Record<string, StatisticType>> = {
  geoDataStatTypeCount: 'count',
  geoDataStatTypeSum: 'sum',
  geoDataStatTypeMin: 'min',
  geoDataStatTypeMax: 'max',
  geoDataStatTypeAverage: 'avg',
  geoDataStatTypeStdDev: 'stddev',
  geoDataStatTypeVariance: 'var',
};

const NUMERIC = new Set<FieldInfo['type']>([
  'geoFieldTypeOID',
  'geoFieldTypeInteger',
  'geoFieldTypeSmallInteger',
  'geoFieldTypeDouble',
  'geoFieldTypeSingle',
]);

async function statistics(ctx: SoapContext, d: Described, request: SoapValue, filter: SoapValue): Promise<SoapObject> {
  if (!isObject(request)) throw invalidArgument('StatisticsRequest', 'StatisticsRequest is required.');
  const t = d.target;
  const fields = t.table.fields.filter((f) => f.type !== 'geoFieldTypeGeometry');
  const descs = Array.isArray(request['StatisticDescriptions']) ? (request['StatisticDescriptions'] as SoapValue[]) : [];
  if (descs.length === 0) {
    throw invalidArgument(
      'StatisticsRequest/StatisticDescriptions',
      'StatisticsRequest/StatisticDescriptions: at least one statistic is needed.',
    );
  }
  const outFields: FieldInfo[] = [];
  const stats: StatisticRequest[] = descs.map((sd, i) => {
    const at = `StatisticsRequest/StatisticDescriptions[${i}]`;
    if (!isObject(sd)) throw invalidArgument(at, `${at} must be a StatisticDescription.`);
    const typeName = typeof sd['StatisticType'] === 'string' ? sd['StatisticType'] : '';
    const type = STAT_TYPES[typeName];
    if (type === undefined) throw invalidArgument(`${at}/StatisticType`, `${at}/StatisticType: '${typeName}' is not a DataStatType value.`);
    const name = typeof sd['StatisticFieldName'] === 'string' ? sd['StatisticFieldName'] : '';
    const f = fieldNamed(fields, name);
    if (f === undefined) throw invalidArgument(`${at}/StatisticFieldName`, `${at}/StatisticFieldName: field '${name}' does not exist.`);
    if (type !== 'count' && type !== 'min' && type !== 'max' && !NUMERIC.has(f.type)) {
      throw invalidArgument(`${at}/StatisticType`, `${at}: ${type} needs a numeric field; '${f.name}' is ${f.type}.`);
    }
    const given = typeof sd['ResultFieldName'] === 'string' ? sd['ResultFieldName'].trim() : '';
    if (given !== '' && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(given)) {
      throw invalidArgument(`${at}/ResultFieldName`, `${at}/ResultFieldName: '${given}' is not a field name (letters, digits, _).`);
    }
    const outName = given !== '' ? given : `${type.toUpperCase()}_${f.name}`;
    // Decision: count is an Integer; min/max keep their field's type; sum, avg, stddev, var are Doubles.
    const outType: FieldInfo['type'] =
      type === 'count'
        ? 'geoFieldTypeInteger'
        : type === 'min' || type === 'max'
          ? f.type === 'geoFieldTypeOID'
            ? 'geoFieldTypeInteger'
            : f.type
          : 'geoFieldTypeDouble';
    outFields.push({
      name: outName,
      type: outType,
      alias: outName,
      length: type === 'min' || type === 'max' ? f.length : 0,
      nullable: true,
      editable: false,
    });
    return { field: f.name, type, outName };
  });
  const names = new Set(outFields.map((f) => f.name.toLowerCase()));
  if (names.size !== outFields.length)
    throw invalidArgument(
      'StatisticsRequest/StatisticDescriptions',
      'StatisticsRequest/StatisticDescriptions: two statistics have the same result field name.',
    );
  const groupText = typeof request['GroupByFields'] === 'string' ? request['GroupByFields'] : '';
  const groupBy = groupText.trim() === '' ? [] : (fieldList(groupText, fields, 'StatisticsRequest/GroupByFields') ?? fields);
  const orderText = typeof request['OrderByFields'] === 'string' ? request['OrderByFields'].trim() : '';
  const orderable = [...groupBy, ...outFields];
  const orderBy =
    orderText === ''
      ? undefined
      : orderText.split(',').map((part) => {
          const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+(asc|desc))?\s*$/i.exec(part);
          const f = m ? fieldNamed(orderable, m[1]!) : undefined;
          if (!m || f === undefined) {
            throw invalidArgument(
              'StatisticsRequest/OrderByFields',
              `StatisticsRequest/OrderByFields: '${part.trim()}' is not a group-by or result field with optional ASC/DESC.`,
            );
          }
          return { field: f.name, descending: (m[2] ?? '').toLowerCase() === 'desc' };
        });
  const p = queryOf(ctx, { ...d, includeGeometry: false }, filter);
  const rows = await t.table.statistics(
    p.query,
    stats,
    groupBy.map((f) => f.name),
    orderBy,
  );
  const outAll = [...groupBy, ...outFields];
  return recordSetOf({
    fields: outAll,
    rows: rows.map((r) => ({ id: 0, attributes: r })),
    geometryType: null,
    spatialReference: ctx.service.spatialReference,
    objectIdField: '',
    displayField: '',
    name: t.name,
  });
}

// ---------------------------------------------------------------------------------------------
// Attachments and popups

const intsOf = (v: SoapValue, path: string): number[] => {
  const arr = isObject(v) && Array.isArray(v['FIDArray']) ? v['FIDArray'] : v;
  if (arr === undefined || arr === null) return [];
  if (!Array.isArray(arr)) throw invalidArgument(path, `${path} must be an array of integers.`);
  return (arr as SoapValue[]).map((x, i) => intOf(x, `${path}[${i}]`));
};

const attachmentInfo = (a: { id: number; parentId: number; name: string; contentType: string; size: number }): SoapObject => ({
  $type: 'AttachmentInfo',
  AttachmentID: a.id,
  ParentID: a.parentId,
  Name: a.name,
  ContentType: a.contentType,
  Size: a.size,
});

/** The rows among `ids` that a definition expression keeps (all of them without one). */
async function keptRows(t: QueryTarget, ids: readonly number[], definitionExpression: string | undefined): Promise<Set<number>> {
  if (definitionExpression === undefined) return new Set(ids);
  return new Set(await t.table.ids({ objectIds: ids, where: definitionExpression, path: 'RowIDs' }));
}

// Decision: the "2" forms honour the description's definition expression: attachments of rows it
// leaves out are not listed, and asking for their data is NOT_FOUND, as for an unknown attachment.
async function attachmentInfos(t: QueryTarget, rowIds: SoapValue, definitionExpression?: string): Promise<SoapValue> {
  const ids = intsOf(rowIds, 'RowIDs');
  if (ids.length === 0) return [];
  const kept = await keptRows(t, ids, definitionExpression);
  return (await t.table.attachmentInfos(ids)).filter((a) => kept.has(a.parentId)).map(attachmentInfo);
}

async function attachmentData(
  ctx: SoapContext,
  t: QueryTarget,
  attachmentIds: SoapValue,
  transport: SoapValue,
  definitionExpression?: string,
): Promise<SoapValue> {
  const ids = intsOf(attachmentIds, 'AttachmentIDs');
  const mode = typeof transport === 'string' && transport !== '' ? transport : 'geoTransportTypeEmbedded';
  if (mode !== 'geoTransportTypeEmbedded' && mode !== 'geoTransportTypeUrl') {
    throw invalidArgument('TransportType', `TransportType: '${mode}' is not geoTransportTypeEmbedded or geoTransportTypeUrl.`);
  }
  if (ids.length === 0) return [];
  const found = await t.table.attachmentData(ids);
  const kept = await keptRows(t, [...new Set(found.map((a) => a.info.parentId))], definitionExpression);
  const byId = new Map(found.filter((a) => kept.has(a.info.parentId)).map((a) => [a.info.id, a]));
  const publish: PublishOutput = publisherOf(ctx);
  const out: SoapObject[] = [];
  for (const [i, id] of ids.entries()) {
    const a = byId.get(id);
    if (a === undefined) throw notFound(`AttachmentIDs[${i}]`, `Attachment ${id} does not exist in '${t.name}' (id ${t.id}).`);
    const url = mode === 'geoTransportTypeUrl' ? await publish(a.data, extensionOf(a.info.name), a.info.contentType) : '';
    out.push({
      $type: 'AttachmentData',
      Data: mode === 'geoTransportTypeEmbedded' ? a.data : new Uint8Array(0),
      AttachmentInfo: attachmentInfo(a.info),
      URL: url,
      TransportType: mode,
    });
  }
  return out;
}

const extensionOf = (name: string): string => {
  const m = /\.([A-Za-z0-9]{1,8})$/.exec(name);
  return m ? m[1]!.toLowerCase() : 'bin';
};

const html = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** A value as a popup shows it: coded values by name, dates in ISO 8601 (UTC), null as empty. */
function popupText(v: AttributeValue | undefined, f: FieldInfo): string {
  if (v === null || v === undefined) return '';
  if (f.domain?.type === 'codedValue') {
    const c = f.domain.codedValues.find((cv) => cv.code === v || String(cv.code) === String(v));
    if (c) return c.name;
  }
  if (v instanceof Date)
    return v
      .toISOString()
      .replace(/T00:00:00\.000Z$/, '')
      .replace(/\.000Z$/, 'Z');
  return String(v);
}

/** One filled template per row id, in the order asked; `{FIELD}` placeholders (case-insensitive) get escaped values. */
async function htmlPopups(t: QueryTarget, rowIds: SoapValue, definitionExpression?: string): Promise<SoapValue> {
  const ids = intsOf(rowIds, 'RowIDs');
  if (ids.length === 0) return [];
  const fields = t.table.fields.filter((f) => f.type !== 'geoFieldTypeGeometry');
  const rows = await t.table.query({
    objectIds: ids,
    outFields: fields.map((f) => f.name),
    returnGeometry: false,
    limit: ids.length,
    // Decision: rows the description's definition expression leaves out are as absent as unknown rows.
    ...(definitionExpression !== undefined ? { where: definitionExpression } : {}),
    path: 'RowIDs',
  });
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id, i) => {
    const row = byId.get(id);
    if (row === undefined) throw notFound(`RowIDs[${i}]`, `Row ${id} does not exist in '${t.name}' (id ${t.id}).`);
    const value = (f: FieldInfo): string =>
      html(popupText(f.name in row.attributes ? row.attributes[f.name] : f.name === t.table.objectIdField ? row.id : null, f));
    if (t.popupTemplate !== undefined) {
      return t.popupTemplate.replace(/\{([^{}]+)\}/g, (whole, name: string) => {
        const f = fieldNamed(fields, name);
        // Decision: a placeholder naming no field stays as written.
        return f ? value(f) : whole;
      });
    }
    // Decision: without a configured template, the vendor's default popup: a table of alias and value.
    const trs = fields.map((f) => `<tr><th>${html(f.alias || f.name)}</th><td>${value(f)}</td></tr>`).join('');
    return `<table>${trs}</table>`;
  });
}

// ---------------------------------------------------------------------------------------------
// Handlers

const byLayerId = (ctx: SoapContext, args: SoapArgs): Described => {
  checkMapName(ctx, args);
  return { target: targetById(ctx, args['LayerID'], 'LayerID', 'Layer'), includeGeometry: true, path: 'LayerID' };
};
const byDescription =
  (name: string) =>
  (ctx: SoapContext, args: SoapArgs): Described => {
    checkMapName(ctx, args);
    return describedTarget(ctx, args[name], name);
  };
const byTableId =
  (name: string) =>
  (ctx: SoapContext, args: SoapArgs): Described => {
    checkMapName(ctx, args);
    return { target: targetById(ctx, args[name], name, 'Table'), includeGeometry: true, path: name };
  };

export const queryHandlers: Record<string, SoapHandler> = {
  async QueryFeatureCount(ctx, args) {
    const d = byLayerId(ctx, args);
    return result(await countOf(d.target, queryOf(ctx, d, args['QueryFilter'])));
  },
  async QueryFeatureIDs(ctx, args) {
    const d = byLayerId(ctx, args);
    return result({ $type: 'FIDSet', FIDArray: await idsOf(d.target, queryOf(ctx, d, args['QueryFilter'])) });
  },
  async QueryFeatureData(ctx, args) {
    const d = byLayerId(ctx, args);
    return result(await recordSet(ctx, d.target, queryOf(ctx, d, args['QueryFilter'])));
  },
  async QueryFeatureCount2(ctx, args) {
    const d = byDescription('LayerDescription')(ctx, args);
    return result(await countOf(d.target, queryOf(ctx, d, args['QueryFilter'])));
  },
  async QueryFeatureIDs2(ctx, args) {
    const d = byDescription('LayerDescription')(ctx, args);
    return result({ $type: 'FIDSet', FIDArray: await idsOf(d.target, queryOf(ctx, d, args['QueryFilter'])) });
  },
  async QueryFeatureData2(ctx, args) {
    const d = byDescription('LayerDescription')(ctx, args);
    return result(await queryResult(ctx, d, queryOf(ctx, d, args['QueryFilter']), args['QueryResultOptions']));
  },
  async QueryRowCount(ctx, args) {
    const d = byDescription('MapTableDescription')(ctx, args);
    return result(await countOf(d.target, queryOf(ctx, d, args['QueryFilter'])));
  },
  async QueryRowIDs(ctx, args) {
    const d = byDescription('MapTableDescription')(ctx, args);
    return result(await idsOf(d.target, queryOf(ctx, d, args['QueryFilter'])));
  },
  async QueryData(ctx, args) {
    const d = byDescription('MapTableDescription')(ctx, args);
    return result(await queryResult(ctx, d, queryOf(ctx, d, args['QueryFilter']), args['QueryResultOptions']));
  },
  async QueryRelatedRecords(ctx, args) {
    const d = byTableId('SourceTableID')(ctx, args);
    return result(await relatedRecords(ctx, d.target, undefined, args['SourceFIDSet'], args['RelateDescription']));
  },
  async QueryRelatedRecords2(ctx, args) {
    const d = byDescription('MapTableDescription')(ctx, args);
    return result(await relatedRecords(ctx, d.target, d.definitionExpression, args['SourceFIDSet'], args['RelateDescription']));
  },
  async QueryDataStatistics(ctx, args) {
    const d = byDescription('MapTableDescription')(ctx, args);
    return result(await statistics(ctx, d, args['StatisticsRequest'], args['QueryFilter']));
  },
  async QueryAttachmentInfos(ctx, args) {
    const d = byTableId('TableID')(ctx, args);
    return result(await attachmentInfos(d.target, args['RowIDs']));
  },
  async QueryAttachmentInfos2(ctx, args) {
    const d = byDescription('MapTableDescription')(ctx, args);
    return result(await attachmentInfos(d.target, args['RowIDs'], d.definitionExpression));
  },
  async QueryAttachmentData(ctx, args) {
    const d = byTableId('TableID')(ctx, args);
    return result(await attachmentData(ctx, d.target, args['AttachmentIDs'], args['TransportType']));
  },
  async QueryAttachmentData2(ctx, args) {
    const d = byDescription('MapTableDescription')(ctx, args);
    return result(await attachmentData(ctx, d.target, args['AttachmentIDs'], args['TransportType'], d.definitionExpression));
  },
  async QueryHTMLPopups(ctx, args) {
    const d = byTableId('TableID')(ctx, args);
    return result(await htmlPopups(d.target, args['RowIDs']));
  },
  async QueryHTMLPopups2(ctx, args) {
    const d = byDescription('MapTableDescription')(ctx, args);
    return result(await htmlPopups(d.target, args['RowIDs'], d.definitionExpression));
  },
};

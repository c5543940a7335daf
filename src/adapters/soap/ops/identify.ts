/**
 * Find, Identify and QueryHyperlinks (seed §7; MapServerFindResult, MapServerIdentifyResult and
 * MapServerHyperlink of protocols.md §5.6) over a map's feature layers through the feature store, and
 * Identify's pixel values of raster layers through the engine (the image service's `pixelValue`).
 */
import BufferOp from 'jsts/org/locationtech/jts/operation/buffer/BufferOp.js';
import GeometryFactory from 'jsts/org/locationtech/jts/geom/GeometryFactory.js';
import type JstsGeometry from 'jsts/org/locationtech/jts/geom/Geometry.js';
import GeoJSONReader from 'jsts/org/locationtech/jts/io/GeoJSONReader.js';
import GeoJSONWriter from 'jsts/org/locationtech/jts/io/GeoJSONWriter.js';
import InteriorPoint from 'jsts/org/locationtech/jts/algorithm/InteriorPoint.js';
import LengthIndexedLine from 'jsts/org/locationtech/jts/linearref/LengthIndexedLine.js';
import { invalidArgument } from '../../../core/errors.js';
import type { SpatialReference } from '../../../core/pixel-block.js';
import { sameSpatialReference } from '../../../graph/align.js';
import { pixelValue } from '../../image/identify.js';
import { transformer } from '../../image/query-geometry.js';
import { imageServicesOf } from '../../image/service.js';
import { inScaleRange, rasterLayerRule, type LayerDrawOptions } from '../../map/draw.js';
import type { AttributeValue, FeatureLayer, FeatureRow, FieldInfo, Geometry, MapLayer, MapService, RasterLayer } from '../../map/model.js';
import { drawnMap, extentIn, type DrawnMap } from '../display.js';
import { extentOfGeometry, geometryOfSoap, mapGeometry, soapGeometry } from '../geometry.js';
import { result, type SoapContext, type SoapHandler, type SoapObject, type SoapValue } from '../operation.js';
import { featureExtentResolver, layerDrawOptionsOf } from './draw.js';
import { anyValueOf, checkMapDescription, isNumericField, layerIdsOf, propertySet, tableFields } from './info.js';

const displayPaths = { mapDescription: 'MapDescription', imageDisplay: 'MapImageDisplay' };

// ---------------------------------------------------------------------------------------------
// What the MapDescription says about each layer: read as the drawing operations read it

type LayerStates = ReadonlyMap<number, LayerDrawOptions>;

const layerStates = (service: MapService, md: SoapObject): LayerStates => layerDrawOptionsOf(service, md, 'MapDescription');

/** Drawn at this scale with these LayerDescriptions (ExportMapImage's VisibleLayerIDs). */
const isVisible = (layer: MapLayer, states: LayerStates, scale: number): boolean =>
  (states.get(layer.id)?.visible ?? layer.defaultVisibility) && inScaleRange(layer, scale);

const definitionOf = (states: LayerStates, id: number): string | undefined => states.get(id)?.definitionExpression;

// ---------------------------------------------------------------------------------------------
// Geometry helpers

const reader = new GeoJSONReader(new GeometryFactory());
const writer = new GeoJSONWriter();

/** `g` buffered by `distance` (map units of its SR); a zero distance answers `g`. */
export function buffered(g: Geometry, distance: number): Geometry {
  if (!(distance > 0)) return g;
  const b = BufferOp.bufferOp(reader.read(g), distance) as unknown;
  return writer.write(b as Parameters<GeoJSONWriter['write']>[0]) as unknown as Geometry;
}

/** `g` from one SR into another (the same object when they are the same SR). */
function reproject(g: Geometry, from: SpatialReference, to: SpatialReference): Geometry {
  if (sameSpatialReference(from, to)) return g;
  return mapGeometry(g, transformer(from, to));
}

/** A feature's label point: the point itself, a line's middle, a polygon's interior point. */
export function labelPoint(g: Geometry): [number, number] | undefined {
  switch (g.type) {
    case 'Point':
      return [g.coordinates[0]!, g.coordinates[1]!];
    case 'MultiPoint': {
      const p = g.coordinates[0];
      return p ? [p[0]!, p[1]!] : undefined;
    }
    case 'LineString':
    case 'MultiLineString': {
      const line = reader.read(
        g.type === 'LineString' ? g : { type: 'LineString', coordinates: longestPart(g.coordinates) },
      ) as JstsGeometry;
      const c = new LengthIndexedLine(line).extractPoint(line.getLength() / 2) as { x: number; y: number };
      return [c.x, c.y];
    }
    case 'Polygon':
    case 'MultiPolygon': {
      const c = InteriorPoint.getInteriorPoint(reader.read(g));
      return c && Number.isFinite(c.x) ? [c.x, c.y] : undefined;
    }
  }
}

function longestPart(parts: readonly (readonly (readonly number[])[])[]): (readonly number[])[] {
  let best: readonly (readonly number[])[] = parts[0] ?? [];
  let bestLen = -1;
  for (const p of parts) {
    let len = 0;
    for (let i = 1; i < p.length; i++) len += Math.hypot(p[i]![0]! - p[i - 1]![0]!, p[i]![1]! - p[i - 1]![1]!);
    if (len > bestLen) {
      bestLen = len;
      best = p;
    }
  }
  return [...best];
}

// ---------------------------------------------------------------------------------------------
// Attributes, popups

/** A feature's attributes as a PropertySet (field names, in field order, typed by field). */
export function attributeProperties(fields: readonly FieldInfo[], attributes: Readonly<Record<string, AttributeValue>>): SoapObject {
  return propertySet(
    fields
      .filter((f) => f.type !== 'geoFieldTypeGeometry' && f.name in attributes)
      .map((f) => [f.name, anyValueOf(attributes[f.name], f.type)] as const),
  );
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A popup template with its `{FIELD}` placeholders filled (values HTML-escaped; unknown names left as they are). */
export function fillPopup(template: string, attributes: Readonly<Record<string, AttributeValue>>): string {
  const byName = new Map(Object.entries(attributes).map(([k, v]) => [k.toLowerCase(), v]));
  return template.replace(/\{([^{}]+)\}/g, (m, name: string) => {
    const key = name.trim().toLowerCase();
    if (!byName.has(key)) return m;
    const v = byName.get(key);
    return v === null || v === undefined ? '' : escapeHtml(v instanceof Date ? v.toISOString() : String(v));
  });
}

const displayValue = (layer: FeatureLayer, row: FeatureRow): string => {
  const key = Object.keys(row.attributes).find((k) => k.toLowerCase() === layer.displayField.toLowerCase());
  const v = key !== undefined ? row.attributes[key] : undefined;
  if (v === null || v === undefined) return '';
  return v instanceof Date ? v.toISOString() : String(v);
};

/** A feature's geometry as the answer's Shape: in the drawn map's spatial reference. */
function shapeOf(g: Geometry | null | undefined, service: MapService, out: SpatialReference): SoapObject | undefined {
  if (!g) return undefined;
  return soapGeometry(reproject(g, service.spatialReference, out), out);
}

const andWhere = (a: string | undefined, b: string | undefined): string | undefined => (a && b ? `(${a}) AND (${b})` : (a ?? b));

// ---------------------------------------------------------------------------------------------
// Find

/** A string literal of the store's SQL subset (quotes doubled): the store binds it as a parameter. */
export const sqlString = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** Is `s` a number as a user types one (12, -3.5, 1e3)? */
const numeric = (s: string): boolean => /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s.trim());

/** A field name as a delimited identifier of the store's SQL subset (it checks the name against the table's fields). */
const sqlName = (name: string): string => `"${name}"`;

/** `search` as a LIKE pattern matching itself literally (escape character `\`). */
const likeLiteral = (search: string): string => search.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The where clause finding `search` in `field`: string fields compare upper-cased on both sides by the
 * store (its case folding decides; rows are checked again here), as a substring with `contains`
 * (LIKE with `%`, `_` and `\` of the search escaped) else as the whole value; numeric fields compare
 * equal when the search string is a number. Field names are the table's own, quoted (the store checks
 * them again); the search text is only ever a string literal, which the store binds as a parameter.
 * Undefined when the field cannot hold the value.
 */
export function findClause(field: FieldInfo, search: string, contains: boolean): string | undefined {
  const name = sqlName(field.name);
  if (isNumericField(field)) return numeric(search) ? `${name} = ${Number(search.trim())}` : undefined;
  if (field.type !== 'geoFieldTypeString') return undefined;
  return contains
    ? `UPPER(${name}) LIKE UPPER(${sqlString(`%${likeLiteral(search)}%`)}) ESCAPE '\\'`
    : `UPPER(${name}) = UPPER(${sqlString(search)})`;
}

/** Does `value` match the search exactly as Find means it (the store's LIKE also lets `%`/`_` of the search match anything)? */
function findMatches(value: AttributeValue | undefined, field: FieldInfo, search: string, contains: boolean): boolean {
  if (value === null || value === undefined) return false;
  if (isNumericField(field)) return typeof value === 'number' && numeric(search) && value === Number(search.trim());
  const v = String(value).toUpperCase();
  const s = search.toUpperCase();
  return contains ? v.includes(s) : v === s;
}

function searchFieldsOf(layer: FeatureLayer, value: SoapValue, search: string): FieldInfo[] {
  const fields = layer.table.fields.filter((f) => f.type === 'geoFieldTypeString' || (isNumericField(f) && numeric(search)));
  const names = (typeof value === 'string' ? value : '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
  // Decision: SearchFields names fields across layers; a layer searches those of them it has (none given: all its text fields).
  return names.length === 0 ? fields : fields.filter((f) => names.includes(f.name.toLowerCase()));
}

const find: SoapHandler = async (ctx, args) => {
  const s = ctx.service;
  const md = checkMapDescription(s, args['MapDescription']);
  const m = await drawnMap(s, md, args['MapImageDisplay'], displayPaths, featureExtentResolver(s));
  const search = typeof args['SearchString'] === 'string' ? args['SearchString'] : '';
  if (search.trim() === '') throw invalidArgument('SearchString', 'SearchString must not be empty.');
  const contains = args['Contains'] === true;
  const option = typeof args['FindOption'] === 'string' && args['FindOption'] !== '' ? args['FindOption'] : 'geoFindVisibleLayers';
  if (option !== 'geoFindVisibleLayers' && option !== 'geoFindAllLayers')
    throw invalidArgument('FindOption', `FindOption '${option}' is not known.`);
  const ids = layerIdsOf(s, args['LayerIDs']);
  const states = layerStates(s, md);
  const layers = (ids.length > 0 ? ids.map((id) => s.byId(id) as MapLayer) : s.layers).filter(
    (l): l is FeatureLayer => l.kind === 'feature' && (option === 'geoFindAllLayers' || isVisible(l, states, m.scale)),
  );
  const out: SoapObject[] = [];
  const limit = s.maxRecordCount;
  for (const layer of layers) {
    if (out.length >= limit) break;
    const fields = searchFieldsOf(layer, args['SearchFields'], search);
    const all = tableFields(layer.table);
    for (const field of fields) {
      if (out.length >= limit) break;
      const clause = findClause(field, search, contains);
      if (!clause) continue;
      const rows = await layer.table.query({
        where: andWhere(definitionOf(states, layer.id), clause)!,
        returnGeometry: true,
        limit: limit - out.length,
        orderBy: [{ field: layer.table.objectIdField, descending: false }],
        path: states.get(layer.id)?.path ?? 'MapDescription',
      });
      for (const row of rows) {
        const key = Object.keys(row.attributes).find((k) => k.toLowerCase() === field.name.toLowerCase()) ?? field.name;
        const value = row.attributes[key];
        if (!findMatches(value, field, search, contains)) continue;
        const shape = shapeOf(row.geometry, s, m.spatialReference);
        out.push({
          $type: 'MapServerFindResult',
          Value: value instanceof Date ? value.toISOString() : String(value),
          LayerID: layer.id,
          FeatureID: row.id,
          FieldName: field.name,
          ...(shape ? { Shape: shape } : {}),
          Properties: attributeProperties(all, row.attributes),
        });
        if (out.length >= limit) break;
      }
    }
  }
  return result(out);
};

// ---------------------------------------------------------------------------------------------
// Identify

const IDENTIFY_OPTIONS = new Set([
  'geoIdentifyTopmost',
  'geoIdentifyAllLayers',
  'geoIdentifyVisibleLayers',
  'geoIdentifyTopOneWithHTMLPopup',
  'geoIdentifyVisibleWithHTMLPopup',
]);

/** The point a raster layer is identified at: the search point, else the centre of the shape's extent. */
function identifyPoint(g: Geometry): [number, number] | undefined {
  if (g.type === 'Point') return [g.coordinates[0]!, g.coordinates[1]!];
  const e = extentOfGeometry(g);
  return e ? [(e.xmin + e.xmax) / 2, (e.ymin + e.ymax) / 2] : undefined;
}

async function identifyRaster(ctx: SoapContext, layer: RasterLayer, point: [number, number], m: DrawnMap): Promise<SoapObject> {
  const services = imageServicesOf(ctx.deps);
  const rasterSr = layer.image.info.spatialReference ?? m.spatialReference;
  const [x, y] = transformer(m.spatialReference, rasterSr)(point[0], point[1]);
  const inside = Number.isFinite(x) && Number.isFinite(y);
  // The data value (the raster as stored), and with a rendering rule the value the layer draws.
  const value = inside ? await pixelValue(services, layer.image, undefined, x, y, undefined, ctx.signal) : 'NoData';
  const props: [string, SoapValue][] = [['Pixel Value', value]];
  const bands = value === 'NoData' ? [] : value.split(' ');
  if (bands.length > 1) bands.forEach((b, i) => props.push([`Band_${i + 1}`, b]));
  if (layer.renderingRule !== undefined) {
    // Decision: a layer drawn through a rendering rule also reports the rule's output ('Rendered Value').
    const rendered = inside ? await pixelValue(services, layer.image, rasterLayerRule(layer), x, y, undefined, ctx.signal) : 'NoData';
    props.push(['Rendered Value', rendered]);
  }
  return {
    $type: 'MapServerIdentifyResult',
    LayerID: layer.id,
    Name: value,
    Properties: propertySet(props),
    Shape: soapGeometry({ type: 'Point', coordinates: point }, m.spatialReference),
  };
}

const identify: SoapHandler = async (ctx, args) => {
  const s = ctx.service;
  const md = checkMapDescription(s, args['MapDescription']);
  const m = await drawnMap(s, md, args['MapImageDisplay'], displayPaths, featureExtentResolver(s));
  const option =
    typeof args['IdentifyOption'] === 'string' && args['IdentifyOption'] !== '' ? args['IdentifyOption'] : 'geoIdentifyTopmost';
  if (!IDENTIFY_OPTIONS.has(option)) throw invalidArgument('IdentifyOption', `IdentifyOption '${option}' is not known.`);
  const tolerance = typeof args['Tolerance'] === 'number' ? args['Tolerance'] : 0;
  if (!Number.isInteger(tolerance) || tolerance < 0 || tolerance > 1000) {
    throw invalidArgument('Tolerance', 'Tolerance must be a whole number of pixels from 0 to 1000.');
  }
  const shape = geometryOfSoap(args['SearchShape'], 'SearchShape');
  // The shape in the drawn map's SR (its own SR when it carries one), buffered by the tolerance in pixels.
  const drawnShape = shape.spatialReference ? reproject(shape.geometry, shape.spatialReference, m.spatialReference) : shape.geometry;
  if (!extentOfGeometry(drawnShape) || !positionsFinite(drawnShape)) {
    throw invalidArgument('SearchShape', "SearchShape cannot be placed on the map's spatial reference.");
  }
  const search = buffered(drawnShape, tolerance * m.resolution);
  const inService = reproject(search, m.spatialReference, s.spatialReference);
  const ids = layerIdsOf(s, args['LayerIDs']);
  const states = layerStates(s, md);
  const withPopup = option === 'geoIdentifyTopOneWithHTMLPopup' || option === 'geoIdentifyVisibleWithHTMLPopup';
  const visibleOnly = option !== 'geoIdentifyAllLayers';
  const topOnly = option === 'geoIdentifyTopmost' || option === 'geoIdentifyTopOneWithHTMLPopup';
  // Candidates top to bottom (layer 0 is drawn on top).
  const layers = (ids.length > 0 ? [...ids].sort((a, b) => a - b).map((id) => s.byId(id) as MapLayer) : [...s.layers]).filter(
    (l) => (!visibleOnly || isVisible(l, states, m.scale)) && (!withPopup || (l.kind === 'feature' && l.popupTemplate !== undefined)),
  );
  const out: SoapObject[] = [];
  const limit = s.maxRecordCount;
  const point = identifyPoint(drawnShape);
  for (const layer of layers) {
    if (out.length >= limit) break;
    const before = out.length;
    if (layer.kind === 'raster') {
      if (!point) continue;
      const r = await identifyRaster(ctx, layer, point, m);
      // A raster answers where it has data (topmost: a NoData pixel lets the layers below answer).
      if (r['Name'] !== 'NoData' || !topOnly) out.push(r);
    } else {
      const rows = await layer.table.query({
        ...(definitionOf(states, layer.id) ? { where: definitionOf(states, layer.id)! } : {}),
        spatial: { geometry: inService, relation: 'intersects' },
        returnGeometry: true,
        limit: limit - out.length,
        orderBy: [{ field: layer.table.objectIdField, descending: false }],
        path: states.get(layer.id)?.path ?? 'MapDescription',
      });
      const fields = tableFields(layer.table);
      for (const row of rows) {
        const shape = shapeOf(row.geometry, s, m.spatialReference);
        out.push({
          $type: 'MapServerIdentifyResult',
          LayerID: layer.id,
          Name: displayValue(layer, row),
          Properties: attributeProperties(fields, row.attributes),
          ...(shape ? { Shape: shape } : {}),
          ...(withPopup && layer.popupTemplate ? { HTMLPopup: fillPopup(layer.popupTemplate, row.attributes) } : {}),
          FeatureID: row.id,
        });
      }
    }
    if (topOnly && out.length > before) break;
  }
  return result(out);
};

function positionsFinite(g: Geometry): boolean {
  const e = extentOfGeometry(g);
  return e !== undefined && [e.xmin, e.ymin, e.xmax, e.ymax].every(Number.isFinite);
}

// ---------------------------------------------------------------------------------------------
// QueryHyperlinks

const queryHyperlinks: SoapHandler = async (ctx, args) => {
  const s = ctx.service;
  const md = checkMapDescription(s, args['MapDescription']);
  const m = await drawnMap(s, md, args['MapImageDisplay'], displayPaths, featureExtentResolver(s));
  const ids = layerIdsOf(s, args['LayerIDs']);
  const states = layerStates(s, md);
  // Decision: no LayerIDs = the visible layers; listed layers answer whether or not they are visible.
  const layers = (ids.length > 0 ? ids.map((id) => s.byId(id) as MapLayer) : s.layers.filter((l) => isVisible(l, states, m.scale))).filter(
    (l): l is FeatureLayer & { hyperlinkField: string } => l.kind === 'feature' && l.hyperlinkField !== undefined,
  );
  const extent = extentIn(m.extent, m.spatialReference, s.spatialReference);
  const area: Geometry = {
    type: 'Polygon',
    coordinates: [
      [
        [extent.xmin, extent.ymin],
        [extent.xmax, extent.ymin],
        [extent.xmax, extent.ymax],
        [extent.xmin, extent.ymax],
        [extent.xmin, extent.ymin],
      ],
    ],
  };
  const out: SoapObject[] = [];
  const limit = s.maxRecordCount;
  for (const layer of layers) {
    if (out.length >= limit) break;
    const f = layer.hyperlinkField;
    const rows = await layer.table.query({
      where: andWhere(definitionOf(states, layer.id), `${sqlName(f)} IS NOT NULL AND ${sqlName(f)} <> ''`)!,
      spatial: { geometry: area, relation: 'intersects' },
      outFields: [f],
      returnGeometry: true,
      limit: limit - out.length,
      orderBy: [{ field: layer.table.objectIdField, descending: false }],
      path: states.get(layer.id)?.path ?? 'MapDescription',
    });
    for (const row of rows) {
      const key = Object.keys(row.attributes).find((k) => k.toLowerCase() === f.toLowerCase()) ?? f;
      const url = row.attributes[key];
      if (url === null || url === undefined || String(url).trim() === '') continue;
      const p = row.geometry ? labelPoint(reproject(row.geometry, s.spatialReference, m.spatialReference)) : undefined;
      out.push({
        $type: 'MapServerHyperlink',
        ...(p ? { Location: soapGeometry({ type: 'Point', coordinates: p }, m.spatialReference) } : {}),
        URL: String(url),
      });
    }
  }
  return result(out);
};

export const identifyHandlers: Record<string, SoapHandler> = {
  Find: find,
  Identify: identify,
  QueryHyperlinks: queryHyperlinks,
};

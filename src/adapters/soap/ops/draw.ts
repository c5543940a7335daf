/**
 * The drawing operations of the SOAP map service (seed §7, protocols.md §5.5): ExportMapImage,
 * ExportScaleBar, GetLegendInfo and GetLegendInfo2.
 *
 * - Images are drawn by map/draw.ts (`drawMap`), scale bars by map/scale-bar.ts, legend patches by
 *   map/symbols.ts (`drawPatch`) and, for raster layers, the image service's legend
 *   (`legendEntries`/`swatchPng`).
 * - Formats (ImageType/ImageFormat): PNG, PNG24, PNG32, JPG, JPGPNG, GIF, BMP/DIB, TIFF (GeoTIFF),
 *   PDF and SVG are written (`encodeRgba`); EMF, PS, AI and None are not: a soap:Client fault
 *   "Image format not supported".
 * - ImageReturnType geoImageReturnMimeData: the bytes in ImageData, ImageURL empty;
 *   geoImageReturnURL: the image written to the site's output folder (map/outputs.ts) and its URL
 *   in ImageURL (with the caller's token for a secured service), ImageData omitted.
 * - ExportMapImage honours the MapDescription's LayerDescriptions (Visible, DefinitionExpression,
 *   selections with SelectionColor/SelectionSymbol and their buffers, ShowLabels, DrawingDescription
 *   renderer, labeling and Transparency), BackgroundSymbol, SelectionColor, TransparentColor,
 *   CustomGraphics, Rotation and SpatialReference, and ImageDisplay's TransparentColor.
 */
import { EngineError, invalidArgument } from '../../../core/errors.js';
import type { Extent, SpatialReference } from '../../../core/pixel-block.js';
import { transformer } from '../../image/query-geometry.js';
import { planServiceRule } from '../../image/render-request.js';
import { legendEntries, SWATCH } from '../../image/legend.js';
import { imageServicesOf } from '../../image/service.js';
import { Image, createCanvas } from '@napi-rs/canvas';
import {
  drawMap,
  encodeRgba,
  rasterLayerRule,
  visibleLayerIds,
  type DrawMapOptions,
  type EncodedMapImage,
  type LayerDrawOptions,
  type MapGraphic,
  type MapImageFormat,
} from '../../map/draw.js';
import type { FeatureLayer, Geometry, MapLayer, MapService, RasterLayer, RendererJson } from '../../map/model.js';
import type { LabelClass } from '../../map/labels.js';
import { mapOutputsOf, outputUrl } from '../../map/outputs.js';
import { DEFAULT_TEXT, defaultScaleBar, drawScaleBar, UNIT_METERS, type ScaleBarSpec, type TextStyle } from '../../map/scale-bar.js';
import { defaultSymbol, drawPatch, parseRenderer, type EsriSymbol, type PatchShapes, type Rgba } from '../../map/symbols.js';
import { drawnMap, extentOfEnvelope, imageDisplayOf, isObject } from '../display.js';
import { result, type SoapContext, type SoapHandler, type SoapObject, type SoapValue } from '../operation.js';
import { optionalSpatialReference, soapSpatialReference } from '../spatial-reference.js';

const num = (o: SoapObject, k: string): number | undefined => (typeof o[k] === 'number' && Number.isFinite(o[k]) ? o[k] : undefined);
const str = (o: SoapObject, k: string): string | undefined => (typeof o[k] === 'string' ? o[k] : undefined);
const bool = (o: SoapObject, k: string): boolean | undefined => (typeof o[k] === 'boolean' ? o[k] : undefined);
const clamp255 = (v: number): number => Math.max(0, Math.min(255, Math.round(v)));

// ---------------------------------------------------------------------------------------------
// Reading requests

/** The map a request names: its MapName / MapDescription Name ('' = the default map). */
export function checkMapName(service: MapService, name: SoapValue, path: string): void {
  if (typeof name !== 'string' || name === '') return;
  if (name.toLowerCase() !== service.mapName.toLowerCase()) {
    throw new EngineError('NOT_FOUND', `Map '${name}' does not exist in this service (its map is '${service.mapName}').`, { path });
  }
}

function hsvToRgb(h: number, s: number, v: number): [number, number, number] {
  const c = v * s;
  const hp = (((h % 360) + 360) % 360) / 60;
  const x = c * (1 - Math.abs((hp % 2) - 1));
  const [r, g, b] = hp < 1 ? [c, x, 0] : hp < 2 ? [x, c, 0] : hp < 3 ? [0, c, x] : hp < 4 ? [0, x, c] : hp < 5 ? [x, 0, c] : [c, 0, x];
  const m = v - c;
  return [clamp255((r + m) * 255), clamp255((g + m) * 255), clamp255((b + m) * 255)];
}

/**
 * A SOAP Color as RGBA: RgbColor, GrayColor (0..255), HsvColor / HlsColor (hue 0..360, others
 * 0..100), CmykColor (0..100); AlphaValue 0 transparent .. 255 opaque (default opaque).
 */
export function colorOfSoap(v: SoapValue, path: string): Rgba | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) throw invalidArgument(path, `${path} must be a Color`);
  const a = clamp255(num(v, 'AlphaValue') ?? 255);
  const n = (k: string): number => num(v, k) ?? 0;
  switch (v.$type ?? 'RgbColor') {
    case 'RgbColor':
      return [clamp255(n('Red')), clamp255(n('Green')), clamp255(n('Blue')), a];
    case 'GrayColor': {
      const g = clamp255(n('GrayLevel'));
      return [g, g, g, a];
    }
    case 'HsvColor':
      return [...hsvToRgb(n('Hue'), n('Saturation') / 100, n('Value') / 100), a];
    case 'HlsColor': {
      const l = n('Lightness') / 100;
      const s = n('Saturation') / 100;
      const val = l + s * Math.min(l, 1 - l);
      return [...hsvToRgb(n('Hue'), val === 0 ? 0 : 2 * (1 - l / val), val), a];
    }
    case 'CmykColor': {
      const k = 1 - n('Black') / 100;
      return [
        clamp255(255 * (1 - n('Cyan') / 100) * k),
        clamp255(255 * (1 - n('Magenta') / 100) * k),
        clamp255(255 * (1 - n('Yellow') / 100) * k),
        a,
      ];
    }
    default:
      throw invalidArgument(path, `${path}: unknown Color type '${v.$type}'`);
  }
}

/** `esriSFSSolid` from `geoSFSSolid`, `esriSFSSolid` or `SFSSolid`. */
const esriEnum = (s: string | undefined): string | undefined => (s === undefined ? undefined : `esri${s.replace(/^(esri|geo)/, '')}`);

const rgbaJson = (c: Rgba | undefined): number[] | undefined => (c ? [...c] : undefined);

/** A SOAP symbol (SimpleFillSymbol, SimpleLineSymbol, SimpleMarkerSymbol) as the Esri JSON symbols.ts draws. */
export function esriSymbolOfSoap(v: SoapValue, path: string): EsriSymbol | undefined {
  if (!isObject(v)) return undefined;
  const color = rgbaJson(colorOfSoap(v['Color'], `${path}/Color`));
  const line = (o: SoapValue, p: string): EsriSymbol | undefined =>
    esriSymbolOfSoap(isObject(o) ? { $type: o.$type ?? 'SimpleLineSymbol', ...o } : o, p);
  switch (v.$type) {
    case 'SimpleFillSymbol':
    case 'FillSymbol': {
      const outline = line(v['Outline'], `${path}/Outline`);
      return {
        type: 'esriSFS',
        style: esriEnum(str(v, 'Style')) ?? 'esriSFSSolid',
        ...(color ? { color } : {}),
        ...(outline ? { outline } : {}),
      };
    }
    case 'SimpleLineSymbol':
    case 'LineSymbol':
      return {
        type: 'esriSLS',
        style: esriEnum(str(v, 'Style')) ?? 'esriSLSSolid',
        ...(color ? { color } : {}),
        width: num(v, 'Width') ?? 1,
      };
    case 'SimpleMarkerSymbol':
    case 'MarkerSymbol': {
      const outlineColor = rgbaJson(colorOfSoap(v['OutlineColor'], `${path}/OutlineColor`));
      const withOutline = bool(v, 'Outline') === true && outlineColor;
      return {
        type: 'esriSMS',
        style: esriEnum(str(v, 'Style')) ?? 'esriSMSCircle',
        ...(color ? { color } : {}),
        size: num(v, 'Size') ?? 8,
        angle: num(v, 'Angle') ?? 0,
        xoffset: num(v, 'XOffset') ?? 0,
        yoffset: num(v, 'YOffset') ?? 0,
        ...(withOutline
          ? { outline: { type: 'esriSLS', style: 'esriSLSSolid', color: outlineColor, width: num(v, 'OutlineSize') ?? 1 } }
          : {}),
      };
    }
    case 'PictureMarkerSymbol':
    case 'PictureFillSymbol': {
      const picture = v['Picture'];
      if (!(picture instanceof Uint8Array)) return undefined;
      const imageData = Buffer.from(picture).toString('base64');
      if (v.$type === 'PictureFillSymbol') {
        const outline = line(v['Outline'], `${path}/Outline`);
        return {
          type: 'esriPFS',
          imageData,
          ...(num(v, 'Width') ? { width: num(v, 'Width') } : {}),
          ...(num(v, 'Height') ? { height: num(v, 'Height') } : {}),
          ...(outline ? { outline } : {}),
        };
      }
      const size = num(v, 'Size');
      const width = num(v, 'Width') || size;
      return {
        type: 'esriPMS',
        imageData,
        ...(width ? { width } : {}),
        ...(size ? { height: size } : {}),
        angle: num(v, 'Angle') ?? 0,
        xoffset: num(v, 'XOffset') ?? 0,
        yoffset: num(v, 'YOffset') ?? 0,
      };
    }
    default:
      return undefined;
  }
}

/**
 * A SOAP FeatureRenderer (SimpleRenderer, ClassBreaksRenderer, UniqueValueRenderer) as the Esri
 * JSON renderer symbols.ts draws; undefined when absent.
 */
export function rendererOfSoap(v: SoapValue, path: string): RendererJson | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) throw invalidArgument(path, `${path} must be a FeatureRenderer`);
  const symbol = (o: SoapObject, k: string, p: string): EsriSymbol | undefined => esriSymbolOfSoap(o[k], `${p}/${k}`);
  const def = symbol(v, 'DefaultSymbol', path);
  // RotationField / RotationType (geoRotateSymbolGeographic or ...Arithmetic) turn marker symbols by an attribute.
  const rotationField = str(v, 'RotationField');
  const rotation = rotationField
    ? {
        rotationExpression: `[${rotationField}]`,
        rotationType: /geographic/i.test(str(v, 'RotationType') ?? '') ? 'geographic' : 'arithmetic',
      }
    : {};
  const defaultLabel = str(v, 'DefaultLabel');
  switch (v.$type) {
    case 'SimpleRenderer': {
      const s = symbol(v, 'Symbol', path);
      return {
        type: 'simple',
        ...(s ? { symbol: s } : {}),
        label: str(v, 'Label') ?? '',
        description: str(v, 'Description') ?? '',
        ...rotation,
      };
    }
    case 'ClassBreaksRenderer': {
      const breaks = (
        Array.isArray(v['Breaks']) ? v['Breaks'] : Array.isArray(v['ClassBreakInfos']) ? v['ClassBreakInfos'] : []
      ) as SoapValue[];
      return {
        type: 'classBreaks',
        field: str(v, 'Field') ?? '',
        minValue: num(v, 'MinimumValue') ?? num(v, 'MinValue') ?? -Infinity,
        classBreakInfos: breaks.filter(isObject).map((b, i) => {
          const s = symbol(b, 'Symbol', `${path}/Breaks[${i}]`);
          const lower = num(b, 'ClassMinimumValue') ?? num(b, 'LowerBound');
          return {
            classMaxValue: num(b, 'ClassMaximumValue') ?? num(b, 'UpperBound') ?? Infinity,
            ...(lower !== undefined ? { classMinValue: lower } : {}),
            label: str(b, 'Label') ?? '',
            description: str(b, 'Description') ?? '',
            ...(s ? { symbol: s } : {}),
          };
        }),
        ...(def ? { defaultSymbol: def } : {}),
        ...(defaultLabel ? { defaultLabel } : {}),
        ...rotation,
      };
    }
    case 'UniqueValueRenderer': {
      const infos = (Array.isArray(v['UniqueValueInfos']) ? v['UniqueValueInfos'] : []) as SoapValue[];
      return {
        type: 'uniqueValue',
        field1: str(v, 'Field1') ?? '',
        ...(str(v, 'Field2') ? { field2: str(v, 'Field2') } : {}),
        ...(str(v, 'Field3') ? { field3: str(v, 'Field3') } : {}),
        fieldDelimiter: str(v, 'FieldDelimiter') || ',',
        uniqueValueInfos: infos.filter(isObject).map((u, i) => {
          const s = symbol(u, 'Symbol', `${path}/UniqueValueInfos[${i}]`);
          const value = u['Value'];
          return {
            value: typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : '',
            label: str(u, 'Label') ?? '',
            description: str(u, 'Description') ?? '',
            ...(s ? { symbol: s } : {}),
          };
        }),
        ...(def ? { defaultSymbol: def } : {}),
        ...(defaultLabel ? { defaultLabel } : {}),
        ...rotation,
      };
    }
    default:
      throw invalidArgument(path, `${path}: unknown FeatureRenderer type '${v.$type}'`);
  }
}

/** The layer (not table) of an id, or NOT_FOUND naming the map. */
export function layerOf(service: MapService, id: number, path: string): MapLayer {
  const layer = service.layers.find((l) => l.id === id);
  if (!layer) throw new EngineError('NOT_FOUND', `Layer ${id} does not exist in map '${service.mapName}'.`, { path });
  return layer;
}

/**
 * The label classes of a layer whose labels are shown: the DrawingDescription's LabelingDescription
 * (LabelExpression, SimpleTextSymbol, WhereClause, MinimumScale/MaximumScale), else Decision: one
 * class labelling every feature with its display field in 8 pt DejaVu Sans, black.
 */
function labelClassesOf(layer: FeatureLayer, dd: SoapValue, path: string): LabelClass[] {
  const labeling = isObject(dd) ? dd['LabelingDescription'] : undefined;
  const classes =
    isObject(labeling) && Array.isArray(labeling['LabelClassDescriptions'])
      ? (labeling['LabelClassDescriptions'] as SoapValue[])
      : undefined;
  if (!classes) return [{ expression: `[${layer.displayField}]`, style: DEFAULT_TEXT, minScale: 0, maxScale: 0 }];
  const out: LabelClass[] = [];
  classes.forEach((c, i) => {
    if (!isObject(c)) return;
    const p = `${path}/LabelingDescription/LabelClassDescriptions[${i}]`;
    const where = str(c, 'WhereClause');
    out.push({
      expression: str(c, 'LabelExpression') || `[${layer.displayField}]`,
      style: textStyleOf(c['Symbol'], DEFAULT_TEXT, `${p}/Symbol`),
      ...(where && where.trim() !== '' ? { where } : {}),
      minScale: Math.max(0, num(c, 'MinimumScale') ?? 0),
      maxScale: Math.max(0, num(c, 'MaximumScale') ?? 0),
    });
  });
  return out;
}

/** The LayerDescriptions of a MapDescription, read into drawing options per layer id. */
export function layerDrawOptionsOf(service: MapService, md: SoapObject, path: string): Map<number, LayerDrawOptions> {
  const out = new Map<number, LayerDrawOptions>();
  const lds = md['LayerDescriptions'];
  if (!Array.isArray(lds)) return out;
  lds.forEach((ld: SoapValue, i) => {
    if (!isObject(ld) || ld.$type === 'StandaloneTableDescription') return;
    const p = `${path}/LayerDescriptions[${i}]`;
    const id = num(ld, 'LayerID') ?? 0;
    const sel = Array.isArray(ld['SelectionFeatures'])
      ? (ld['SelectionFeatures'] as SoapValue[]).filter((x): x is number => typeof x === 'number')
      : [];
    const selColor = colorOfSoap(ld['SelectionColor'], `${p}/SelectionColor`);
    const selSymbol = bool(ld, 'SetSelectionSymbol') ? esriSymbolOfSoap(ld['SelectionSymbol'], `${p}/SelectionSymbol`) : undefined;
    const def = str(ld, 'DefinitionExpression');
    const bufferDistance = num(ld, 'SelectionBufferDistance') ?? 0;
    if (bufferDistance < 0) throw invalidArgument(`${p}/SelectionBufferDistance`, `${p}/SelectionBufferDistance must not be negative`);
    const bufferSymbol = esriSymbolOfSoap(ld['SelectionBufferSymbol'], `${p}/SelectionBufferSymbol`);
    const selectionBuffer =
      bool(ld, 'ShowSelectionBuffer') && bufferDistance > 0
        ? { distance: bufferDistance, ...(bufferSymbol ? { symbol: bufferSymbol } : {}) }
        : undefined;
    const dd = ld['DrawingDescription'];
    const renderer = isObject(dd) ? rendererOfSoap(dd['FeatureRenderer'], `${p}/DrawingDescription/FeatureRenderer`) : undefined;
    const transparency = isObject(dd) ? num(dd, 'Transparency') : undefined;
    if (transparency !== undefined && !(transparency >= 0 && transparency <= 100)) {
      throw invalidArgument(`${p}/DrawingDescription/Transparency`, `${p}/DrawingDescription/Transparency must be from 0 to 100`);
    }
    const layer = layerOf(service, id, `${p}/LayerID`);
    const labels = bool(ld, 'ShowLabels') && layer.kind === 'feature' ? labelClassesOf(layer, dd, `${p}/DrawingDescription`) : [];
    out.set(id, {
      ...(labels.length > 0 ? { labels } : {}),
      ...(renderer ? { renderer } : {}),
      ...(transparency ? { transparency } : {}),
      ...(typeof ld['Visible'] === 'boolean' ? { visible: ld['Visible'] } : {}),
      ...(def && def.trim() !== '' ? { definitionExpression: def } : {}),
      ...(sel.length > 0 ? { selectionFeatures: sel } : {}),
      ...(selColor ? { selectionColor: selColor } : {}),
      ...(selSymbol ? { selectionSymbol: selSymbol } : {}),
      ...(selectionBuffer ? { selectionBuffer } : {}),
      path: p,
    });
  });
  return out;
}

type XYFn = (x: number, y: number) => readonly [number, number];

function pointsOf(v: SoapValue, map: XYFn, path: string): number[][] {
  if (!Array.isArray(v)) return [];
  return (v as SoapValue[]).map((p, i) => {
    if (!isObject(p) || num(p, 'X') === undefined || num(p, 'Y') === undefined) {
      throw invalidArgument(`${path}[${i}]`, `${path}[${i}] must be a point with X and Y`);
    }
    return [...map(num(p, 'X')!, num(p, 'Y')!)];
  });
}

/**
 * A SOAP geometry (PointN, MultipointN, PolylineN, PolygonN, EnvelopeN) as GeoJSON in `to`: a
 * geometry carrying its own SpatialReference is reprojected, one without is taken to be in `to`.
 */
export function geometryOfSoap(v: SoapValue, to: SpatialReference, path: string): Geometry {
  if (!isObject(v)) throw invalidArgument(path, `${path} must be a Geometry`);
  const srValue = v['SpatialReference'];
  // A SpatialReference naming nothing (a client echoing UnknownCoordinateSystem) is the drawing's own.
  const own = optionalSpatialReference(srValue, `${path}/SpatialReference`);
  const map: XYFn = own ? transformer(own, to) : (x, y) => [x, y];
  const parts = (k: string): number[][][] => {
    const a = v[k];
    if (!Array.isArray(a)) return [];
    return (a as SoapValue[]).map((part, i) =>
      pointsOf(isObject(part) ? part['PointArray'] : undefined, map, `${path}/${k}[${i}]/PointArray`),
    );
  };
  switch (v.$type) {
    case 'PointN':
    case 'Point':
      return { type: 'Point', coordinates: pointsOf([v], map, path)[0]! };
    case 'MultipointN':
      return { type: 'MultiPoint', coordinates: pointsOf(v['PointArray'], map, `${path}/PointArray`) };
    case 'PolylineN':
      return { type: 'MultiLineString', coordinates: parts('PathArray') };
    case 'PolygonN':
      return { type: 'Polygon', coordinates: parts('RingArray') };
    case 'EnvelopeN': {
      const e = extentOfEnvelope(v, path);
      const ring = [
        [e.xmin, e.ymin],
        [e.xmin, e.ymax],
        [e.xmax, e.ymax],
        [e.xmax, e.ymin],
        [e.xmin, e.ymin],
      ].map(([x, y]) => [...map(x!, y!)]);
      return { type: 'Polygon', coordinates: [ring] };
    }
    default:
      throw invalidArgument(path, `${path}: geometry type '${v.$type ?? '(none)'}' cannot be drawn`);
  }
}

function centreOf(g: Geometry): number[] {
  const e = boundsOf([g]);
  return e ? [(e.xmin + e.xmax) / 2, (e.ymin + e.ymax) / 2] : [Number.NaN, Number.NaN];
}

const TEXT_ALIGN: Readonly<Record<string, 'left' | 'center' | 'right'>> = { left: 'left', center: 'center', right: 'right', full: 'left' };

/**
 * MapDescription CustomGraphics: MarkerElement (Point), LineElement (Line), PolygonElement
 * (Polygon), RectangleElement / CircleElement / EllipseElement (Rectangle; circles and ellipses
 * drawn as their inscribed ellipse), TextElement (Text at Point with a TextSymbol), each with its
 * Symbol; in the drawn SR.
 */
export function graphicsOf(v: SoapValue, to: SpatialReference, path: string): MapGraphic[] {
  if (!Array.isArray(v)) return [];
  const out: MapGraphic[] = [];
  (v as SoapValue[]).forEach((el, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(el)) return;
    if (el.$type === 'GroupElement') {
      out.push(...graphicsOf(el['Elements'], to, `${p}/Elements`));
      return;
    }
    if (el.$type === 'TextElement' || el.$type === 'ParagraphTextElement') {
      const text = str(el, 'Text') ?? '';
      const key = el['TextGeometry'] !== undefined && el['TextGeometry'] !== null ? 'TextGeometry' : 'Point';
      const g = geometryOfSoap(el[key], to, `${p}/${key}`);
      // Decision: text placed on a line or an area is centred on its vertices' bounding box.
      const at = g.type === 'Point' ? g.coordinates : centreOf(g);
      const sym = isObject(el['Symbol']) ? el['Symbol'] : {};
      out.push({
        kind: 'text',
        x: at[0]!,
        y: at[1]!,
        text,
        style: textStyleOf(sym, DEFAULT_TEXT, `${p}/Symbol`),
        angle: num(sym, 'Angle') ?? 0,
        align: TEXT_ALIGN[(str(sym, 'HorizontalAlignment') ?? 'center').replace(/^(esri|geo)THA/, '').toLowerCase()] ?? 'center',
      });
      return;
    }
    const key = ['Point', 'Line', 'Polygon', 'Rectangle'].find((k) => el[k] !== undefined && el[k] !== null);
    if (!key) throw invalidArgument(p, `${p}: a graphic element needs a geometry`);
    let geometry = geometryOfSoap(el[key], to, `${p}/${key}`);
    if ((el.$type === 'CircleElement' || el.$type === 'EllipseElement') && geometry.type === 'Polygon') {
      const ring = geometry.coordinates[0]!;
      const xs = ring.map((c) => c[0]!);
      const ys = ring.map((c) => c[1]!);
      const cx = (Math.min(...xs) + Math.max(...xs)) / 2;
      const cy = (Math.min(...ys) + Math.max(...ys)) / 2;
      const rx = (Math.max(...xs) - Math.min(...xs)) / 2;
      const ry = (Math.max(...ys) - Math.min(...ys)) / 2;
      const pts = Array.from({ length: 73 }, (_, k) => [cx + rx * Math.cos((k * Math.PI) / 36), cy + ry * Math.sin((k * Math.PI) / 36)]);
      geometry = { type: 'Polygon', coordinates: [pts] };
    }
    const fallback =
      geometry.type === 'Point' || geometry.type === 'MultiPoint' ? 'point' : geometry.type === 'MultiLineString' ? 'polyline' : 'polygon';
    const symbol = esriSymbolOfSoap(el['Symbol'], `${p}/Symbol`) ?? defaultSymbol(fallback);
    out.push({ kind: 'geometry', geometry, symbol });
  });
  return out;
}

/** Drawing options of a MapDescription (and the ImageDisplay's TransparentColor, which wins). */
export function mapDrawOptionsOf(
  service: MapService,
  md: SoapObject,
  imageDisplay: SoapValue,
  paths: { mapDescription: string; imageDisplay: string },
  drawnSr: SpatialReference,
  signal?: AbortSignal,
): DrawMapOptions {
  const p = paths.mapDescription;
  const bgSymbol = md['BackgroundSymbol'];
  let backgroundColor: Rgba | undefined;
  if (isObject(bgSymbol)) {
    const style = esriEnum(str(bgSymbol, 'Style'));
    backgroundColor =
      style === 'esriSFSNull' || style === 'esriSFSHollow' ? [0, 0, 0, 0] : colorOfSoap(bgSymbol['Color'], `${p}/BackgroundSymbol/Color`);
  }
  const selectionColor = colorOfSoap(md['SelectionColor'], `${p}/SelectionColor`);
  const transparentColor =
    (isObject(imageDisplay) ? colorOfSoap(imageDisplay['TransparentColor'], `${paths.imageDisplay}/TransparentColor`) : undefined) ??
    colorOfSoap(md['TransparentColor'], `${p}/TransparentColor`);
  const graphics = graphicsOf(md['CustomGraphics'], drawnSr, `${p}/CustomGraphics`);
  const rotation = num(md, 'Rotation') ?? 0;
  const lds = md['LayerDescriptions'];
  const drawOrder =
    bool(md, 'HonorLayerReordering') && Array.isArray(lds)
      ? (lds as SoapValue[]).flatMap((ld) => (isObject(ld) && ld.$type !== 'StandaloneTableDescription' ? [num(ld, 'LayerID') ?? 0] : []))
      : [];
  return {
    ...(drawOrder.length > 0 ? { drawOrder } : {}),
    ...(rotation !== 0 ? { rotation } : {}),
    layers: layerDrawOptionsOf(service, md, p),
    ...(graphics.length > 0 ? { graphics } : {}),
    ...(backgroundColor ? { backgroundColor } : {}),
    ...(selectionColor ? { selectionColor } : {}),
    ...(transparentColor ? { transparentColor } : {}),
    ...(signal ? { signal } : {}),
  };
}

function boundsOf(geometries: readonly Geometry[]): Extent | undefined {
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  const walk = (v: unknown): void => {
    if (Array.isArray(v) && typeof v[0] === 'number') {
      const x = v[0];
      const y = v[1] as number;
      if (x < xmin) xmin = x;
      if (x > xmax) xmax = x;
      if (y < ymin) ymin = y;
      if (y > ymax) ymax = y;
    } else if (Array.isArray(v)) for (const c of v) walk(c);
  };
  for (const g of geometries) walk(g.coordinates);
  return xmin <= xmax ? { xmin, ymin, xmax, ymax } : undefined;
}

/** FeatureExtent map areas: the extent of the listed features of a layer (all when none are listed). */
export function featureExtentResolver(service: MapService) {
  return async (layerId: number, ids: readonly number[] | undefined, path: string): Promise<Extent | undefined> => {
    const layer = layerOf(service, layerId, path.replace(/\/FeatureIDs$/, '/LayerID'));
    if (layer.kind === 'raster') return layer.extent;
    if (!ids || ids.length === 0) return layer.table.extent ?? layer.extent;
    const rows = await layer.table.query({
      objectIds: ids,
      returnGeometry: true,
      outFields: [layer.table.objectIdField],
      limit: ids.length,
      path,
    });
    return boundsOf(rows.flatMap((r) => (r.geometry ? [r.geometry] : [])));
  };
}

const FORMATS: Readonly<Record<string, MapImageFormat | null>> = {
  geoImagePNG: 'png',
  geoImagePNG24: 'png24',
  geoImagePNG32: 'png32',
  geoImageJPG: 'jpg',
  geoImageJPGPNG: 'jpgpng',
  geoImageGIF: 'gif',
  geoImageBMP: 'bmp',
  geoImageDIB: 'bmp',
  geoImageTIFF: 'tiff',
  geoImagePDF: 'pdf',
  geoImageSVG: 'svg',
  geoImageEMF: null,
  geoImagePS: null,
  geoImageAI: null,
  geoImageNone: null,
};

export interface ImageTypeRequest {
  readonly format: MapImageFormat;
  readonly returnType: 'url' | 'mime';
}

/**
 * An ImageType: format and return type. Decision: an absent ImageType (or format) is PNG returned
 * as MIME data (no file left on the server for a caller who did not ask for a URL).
 */
export function imageTypeOf(v: SoapValue, path: string): ImageTypeRequest {
  if (v === undefined || v === null) return { format: 'png', returnType: 'mime' };
  if (!isObject(v)) throw invalidArgument(path, `${path} must be an ImageType`);
  const f = str(v, 'ImageFormat') || 'geoImagePNG';
  const format = FORMATS[f];
  if (format === undefined) throw invalidArgument(`${path}/ImageFormat`, `${path}/ImageFormat: '${f}' is not an image format`);
  if (format === null) {
    throw new EngineError('INVALID_ARGUMENT', 'Image format not supported', {
      path: `${path}/ImageFormat`,
      details: [
        `${path}/ImageFormat: ${f} cannot be written; use geoImagePNG, geoImagePNG32, geoImageJPG, geoImageGIF, geoImageTIFF, geoImagePDF or geoImageSVG.`,
      ],
    });
  }
  const rt = str(v, 'ImageReturnType') || 'geoImageReturnMimeData';
  if (rt !== 'geoImageReturnURL' && rt !== 'geoImageReturnMimeData') {
    throw invalidArgument(`${path}/ImageReturnType`, `${path}/ImageReturnType must be geoImageReturnURL or geoImageReturnMimeData`);
  }
  return { format, returnType: rt === 'geoImageReturnURL' ? 'url' : 'mime' };
}

/** ImageData / ImageURL of an encoded image, per the return type. */
async function imageReturn(
  ctx: SoapContext,
  encoded: EncodedMapImage,
  returnType: 'url' | 'mime',
): Promise<{ ImageData?: Uint8Array; ImageURL: string }> {
  if (returnType === 'mime') return { ImageData: encoded.bytes, ImageURL: '' };
  const outputs = mapOutputsOf(ctx.deps);
  const rec = await outputs.put(encoded.bytes, encoded.ext, { service: `${ctx.service.name}.MapServer`, secured: ctx.token !== undefined });
  return { ImageURL: outputUrl(ctx.origin, rec.name, ctx.token) };
}

// ---------------------------------------------------------------------------------------------
// ExportMapImage

const exportMapImage: SoapHandler = async (ctx, args) => {
  const { service } = ctx;
  const md = args['MapDescription'];
  if (!isObject(md)) throw invalidArgument('MapDescription', 'MapDescription is required');
  checkMapName(service, md['Name'], 'MapDescription/Name');
  const id = args['ImageDescription'];
  if (!isObject(id)) throw invalidArgument('ImageDescription', 'ImageDescription is required');
  const type = imageTypeOf(id['ImageType'], 'ImageDescription/ImageType');
  const paths = { mapDescription: 'MapDescription', imageDisplay: 'ImageDescription/ImageDisplay' };
  const drawn = await drawnMap(service, md, id['ImageDisplay'], paths, featureExtentResolver(service));
  const options = mapDrawOptionsOf(service, md, id['ImageDisplay'], paths, drawn.spatialReference, ctx.signal);
  const image = await drawMap(imageServicesOf(ctx.deps), service, drawn, options);
  const encoded = await encodeRgba({ ...image, dpi: drawn.dpi, grid: drawn }, type.format);
  const ret = await imageReturn(ctx, encoded, type.returnType);
  return result({
    $type: 'MapImage',
    ...ret,
    Extent: { $type: 'EnvelopeN', ...envelope(drawn.extent), SpatialReference: soapSpatialReference(drawn.spatialReference) },
    VisibleLayerIDs: [...image.visibleLayerIds],
    MapScale: drawn.scale,
    ImageHeight: drawn.height,
    ImageWidth: drawn.width,
    ImageDPI: drawn.dpi,
    ImageType: encoded.contentType,
  });
};

const envelope = (e: Extent) => ({ XMin: e.xmin, YMin: e.ymin, XMax: e.xmax, YMax: e.ymax });

// ---------------------------------------------------------------------------------------------
// ExportScaleBar

/** A TextSymbol's font, size and colour (lenient about the font's element names). */
function textStyleOf(v: SoapValue, base: TextStyle, path: string): TextStyle {
  if (!isObject(v)) return base;
  const font = v['Font'];
  // TextSymbol: FontName, FontItalic, FontWeight (an int, 700 bold); SimpleTextSymbol: FontFamilyName, FontStyle, FontWeight (CSS words).
  const family =
    str(v, 'FontName') ??
    str(v, 'FontFamilyName') ??
    (typeof font === 'string' ? font : isObject(font) ? (str(font, 'FontName') ?? str(font, 'Name')) : undefined) ??
    base.family;
  const size = num(v, 'Size') || base.size;
  const w = v['FontWeight'];
  const weight = typeof w === 'number' ? (w >= 600 ? 'bold' : 'normal') : typeof w === 'string' ? w : undefined;
  const italic = bool(v, 'FontItalic');
  const style = italic !== undefined ? (italic ? 'italic' : 'normal') : str(v, 'FontStyle');
  const color = colorOfSoap(v['Color'], `${path}/Color`) ?? base.color;
  if (!(size > 0 && size <= 500)) throw invalidArgument(`${path}/Size`, `${path}/Size must be in (0, 500] points`);
  return {
    family: family || base.family,
    size,
    color,
    bold: weight !== undefined ? /bold/i.test(weight) : base.bold,
    italic: style !== undefined ? /italic|oblique/i.test(style) : base.italic,
  };
}

const LABEL_FREQUENCIES = [
  'geoScaleBarNone',
  'geoScaleBarOne',
  'geoScaleBarMajorDivisions',
  'geoScaleBarDivisions',
  'geoScaleBarDivisionsAndFirstMidpoint',
  'geoScaleBarDivisionsAndFirstSubdivisions',
  'geoScaleBarDivisionsAndSubdivisions',
] as const;
const VERT_POSITIONS = ['geoAbove', 'geoTop', 'geoOn', 'geoBottom', 'geoBelow'] as const;
const BAR_POSITIONS = [
  'geoScaleBarAbove',
  'geoScaleBarBeforeLabels',
  'geoScaleBarAfterLabels',
  'geoScaleBarBeforeBar',
  'geoScaleBarAfterBar',
  'geoScaleBarBelow',
] as const;
const RESIZE_HINTS = ['geoScaleBarFixed', 'geoScaleBarAutoDivision', 'geoScaleBarAutoDivisions'] as const;

function oneOf<T extends string>(o: SoapObject, k: string, allowed: readonly T[], path: string, d: T): T {
  const v = str(o, k);
  if (v === undefined) return d;
  if (!(allowed as readonly string[]).includes(v))
    throw invalidArgument(`${path}/${k}`, `${path}/${k} must be one of ${allowed.join(', ')}`);
  return v as T;
}

/** A ScaleBar request (AlternatingScaleBar or SingleDivisionScaleBar) over the defaults. */
export function scaleBarSpecOf(v: SoapValue, mapUnits: string, path: string): ScaleBarSpec {
  const d = defaultScaleBar(mapUnits);
  if (v === undefined || v === null) return d;
  if (!isObject(v)) throw invalidArgument(path, `${path} must be a ScaleBar`);
  if (v.$type !== undefined && v.$type !== 'AlternatingScaleBar' && v.$type !== 'SingleDivisionScaleBar' && v.$type !== 'ScaleBar') {
    throw invalidArgument(path, `${path}: unknown ScaleBar type '${v.$type}'`);
  }
  const count = (k: string, min: number, max: number, def: number): number => {
    const n = num(v, k);
    if (n === undefined) return def;
    if (!Number.isInteger(n) || n < min || n > max)
      throw invalidArgument(`${path}/${k}`, `${path}/${k} must be a whole number from ${min} to ${max}`);
    return n;
  };
  const points = (k: string, def: number): number => {
    const n = num(v, k);
    if (n === undefined) return def;
    if (!(n >= 0 && n <= 500)) throw invalidArgument(`${path}/${k}`, `${path}/${k} must be from 0 to 500 points`);
    return n;
  };
  const units = str(v, 'Units');
  if (units !== undefined && units !== 'geoUnknownUnits' && UNIT_METERS[units] === undefined) {
    throw invalidArgument(`${path}/Units`, `${path}/Units: '${units}' is not a unit`);
  }
  const division = num(v, 'Division');
  if (division !== undefined && !(division >= 0)) throw invalidArgument(`${path}/Division`, `${path}/Division must not be negative`);
  const fillSym = v['FillSymbol1'] ?? v['FillSymbol'];
  const fill2Sym = v['FillSymbol2'];
  const fill1 = isObject(fillSym)
    ? colorOfSoap(fillSym['Color'], `${path}/${v['FillSymbol1'] !== undefined ? 'FillSymbol1' : 'FillSymbol'}/Color`)
    : undefined;
  const fill2 = isObject(fill2Sym) ? colorOfSoap(fill2Sym['Color'], `${path}/FillSymbol2/Color`) : undefined;
  const outline = isObject(fillSym) && isObject(fillSym['Outline']) ? fillSym['Outline'] : undefined;
  const unitLabel = str(v, 'UnitLabel');
  // Division marks: drawn when a mark height is given (Decision: none by default).
  const divisionHeight = points('DivisionMarkHeight', 0);
  const subdivisionHeight = points('SubdivisionMarkHeight', 0);
  const markSymbol = isObject(v['DivisionMarkSymbol']) ? v['DivisionMarkSymbol'] : undefined;
  const marks =
    divisionHeight > 0 || subdivisionHeight > 0
      ? {
          divisionHeight,
          subdivisionHeight,
          position: oneOf(v, 'MarkPosition', VERT_POSITIONS, path, 'geoAbove'),
          frequency: oneOf(v, 'MarkFrequency', LABEL_FREQUENCIES, path, 'geoScaleBarDivisions'),
          color: (markSymbol ? colorOfSoap(markSymbol['Color'], `${path}/DivisionMarkSymbol/Color`) : undefined) ?? d.outline,
          width: (markSymbol ? num(markSymbol, 'Width') : undefined) ?? 1,
        }
      : undefined;
  const nf = v['NumberFormat'];
  const numberFormat = isObject(nf)
    ? {
        rounding: str(nf, 'RoundingOption') === 'geoRoundNumberOfSignificantDigits' ? ('significant' as const) : ('decimals' as const),
        value: num(nf, 'RoundingValue') ?? (str(nf, 'RoundingOption') === 'geoRoundNumberOfSignificantDigits' ? 6 : 0),
        separator: bool(nf, 'UseSeparator') ?? false,
        zeroPad: bool(nf, 'ZeroPad') ?? false,
        showPlus: bool(nf, 'ShowPlus') ?? false,
      }
    : undefined;
  return {
    ...d,
    kind: v.$type === 'SingleDivisionScaleBar' ? 'single' : 'alternating',
    ...(units !== undefined && units !== 'geoUnknownUnits' ? { units } : {}),
    ...(unitLabel ? { unitLabel } : {}),
    ...(numberFormat ? { numberFormat } : {}),
    ...(marks ? { marks } : {}),
    ...(division !== undefined && division > 0 ? { division } : {}),
    divisions: count('Divisions', 1, 100, d.divisions),
    subdivisions: count('Subdivisions', 0, 100, d.subdivisions),
    divisionsBeforeZero: count('DivisionsBeforeZero', 0, 100, d.divisionsBeforeZero),
    resizeHint: oneOf(v, 'ResizeHint', RESIZE_HINTS, path, d.resizeHint),
    barHeight: points('BarHeight', d.barHeight),
    labelFrequency: oneOf(v, 'LabelFrequency', LABEL_FREQUENCIES, path, d.labelFrequency),
    labelPosition: oneOf(v, 'LabelPosition', VERT_POSITIONS, path, d.labelPosition),
    labelGap: points('LabelGap', d.labelGap),
    labelStyle: textStyleOf(v['LabelSymbol'], d.labelStyle, `${path}/LabelSymbol`),
    unitLabelPosition: oneOf(v, 'UnitLabelPosition', BAR_POSITIONS, path, d.unitLabelPosition),
    unitLabelGap: points('UnitLabelGap', d.unitLabelGap),
    unitLabelStyle: textStyleOf(v['UnitLabelSymbol'], d.unitLabelStyle, `${path}/UnitLabelSymbol`),
    ...(fill1 ? { fill1 } : {}),
    ...(fill2 ? { fill2 } : {}),
    ...(outline ? { outline: colorOfSoap(outline['Color'], `${path}/FillSymbol/Outline/Color`) ?? d.outline } : {}),
    ...(outline && num(outline, 'Width') !== undefined ? { outlineWidth: num(outline, 'Width')! } : {}),
  };
}

/** Decision: a scale bar image without an ImageDisplay is 400 x 50 pixels at 96 DPI. */
const DEFAULT_BAR_DISPLAY = { ImageWidth: 400, ImageHeight: 50, ImageDPI: 96 };

const exportScaleBar: SoapHandler = async (ctx, args) => {
  const { service } = ctx;
  const md = args['MapDescription'];
  if (!isObject(md)) throw invalidArgument('MapDescription', 'MapDescription is required');
  checkMapName(service, md['Name'], 'MapDescription/Name');
  const id = args['ImageDescription'];
  if (!isObject(id)) throw invalidArgument('ImageDescription', 'ImageDescription is required');
  const type = imageTypeOf(id['ImageType'], 'ImageDescription/ImageType');
  const drawn = await drawnMap(
    service,
    md,
    args['MapDisplay'],
    { mapDescription: 'MapDescription', imageDisplay: 'MapDisplay' },
    featureExtentResolver(service),
  );
  const bar = imageDisplayOf(id['ImageDisplay'] ?? DEFAULT_BAR_DISPLAY, service, 'ImageDescription/ImageDisplay');
  const spec = scaleBarSpecOf(args['ScaleBar'], service.units, 'ScaleBar');
  // Decision: without BackGroundColor the bar is drawn on white (as a printed map's margin).
  const background = colorOfSoap(args['BackGroundColor'], 'BackGroundColor') ?? [255, 255, 255, 255];
  const { rgba } = drawScaleBar(spec, drawn.scale, bar.width, bar.height, bar.dpi, background);
  const display = id['ImageDisplay'];
  const transparent = isObject(display)
    ? colorOfSoap(display['TransparentColor'], 'ImageDescription/ImageDisplay/TransparentColor')
    : undefined;
  if (transparent) {
    for (let i = 0; i < rgba.length; i += 4) {
      if (rgba[i] === transparent[0] && rgba[i + 1] === transparent[1] && rgba[i + 2] === transparent[2]) rgba[i + 3] = 0;
    }
  }
  const encoded = await encodeRgba({ width: bar.width, height: bar.height, rgba, dpi: bar.dpi }, type.format);
  const ret = await imageReturn(ctx, encoded, type.returnType);
  return result({
    $type: 'ImageResult',
    ...ret,
    ImageHeight: bar.height,
    ImageWidth: bar.width,
    ImageDPI: bar.dpi,
    ImageType: encoded.contentType,
  });
};

// ---------------------------------------------------------------------------------------------
// Legends

interface Patch {
  readonly width: number;
  readonly height: number;
  readonly dpi: number;
  readonly shapes: PatchShapes;
}

/** Decision: LegendPatch sizes of 0 are 15 pt (20 px at 96 DPI, the vendor's patch), ImageDPI 0 is 96; at most 1000 px a side. */
function patchOf(v: SoapValue, path: string): Patch {
  const o = isObject(v) ? v : {};
  const dpi = num(o, 'ImageDPI') || 96;
  if (!(dpi > 0 && dpi <= 2400)) throw invalidArgument(`${path}/ImageDPI`, `${path}/ImageDPI must be in (0, 2400]`);
  const px = (k: string): number => {
    const pt = num(o, k) || 15;
    const n = Math.round((pt * dpi) / 72);
    if (!(pt > 0) || n < 1 || n > 1000) throw invalidArgument(`${path}/${k}`, `${path}/${k} must give 1 to 1000 pixels at ImageDPI`);
    return n;
  };
  // AreaPatch / LinePatch: their Geometry (in any units) is the shape fills / lines are drawn in.
  const shapeOf = (k: string): { geometry?: Geometry; preserve?: boolean } => {
    const patch = o[k];
    if (!isObject(patch) || !isObject(patch['Geometry'])) return {};
    const { SpatialReference: _sr, ...shape } = patch['Geometry'];
    return {
      geometry: geometryOfSoap(shape, {}, `${path}/${k}/Geometry`),
      preserve: bool(patch, 'PreserveAspectRatio') ?? false,
    };
  };
  const area = shapeOf('AreaPatch');
  const line = shapeOf('LinePatch');
  const shapes: PatchShapes = {
    ...(area.geometry ? { area: area.geometry } : {}),
    ...(line.geometry ? { line: line.geometry } : {}),
    preserveAspect: (area.preserve ?? false) || (line.preserve ?? false),
  };
  return { width: px('Width'), height: px('Height'), dpi, shapes };
}

async function symbolImage(
  ctx: SoapContext,
  rgba: Uint8ClampedArray,
  w: number,
  h: number,
  dpi: number,
  type: ImageTypeRequest,
): Promise<SoapObject> {
  const encoded = await encodeRgba({ width: w, height: h, rgba, dpi }, type.format);
  const ret = await imageReturn(ctx, encoded, type.returnType);
  return { $type: 'ImageResult', ...ret, ImageHeight: h, ImageWidth: w, ImageDPI: dpi, ImageType: encoded.contentType };
}

function legendClass(label: string, description: string, image: SoapObject): SoapObject {
  return { $type: 'MapServerLegendClass', Label: label, Description: description, SymbolImage: image };
}

async function featureLegend(
  ctx: SoapContext,
  layer: FeatureLayer,
  patch: Patch,
  type: ImageTypeRequest,
  override?: RendererJson,
): Promise<SoapObject[]> {
  const renderer = parseRenderer(override ?? layer.renderer, layer.table.geometryType);
  const classes = [...renderer.classes, ...(renderer.defaultClass ? [renderer.defaultClass] : [])];
  const out: SoapObject[] = [];
  for (const c of classes) {
    const canvas = drawPatch(c.symbol, patch.width, patch.height, patch.dpi / 72, patch.shapes);
    const rgba = canvas.getContext('2d').getImageData(0, 0, patch.width, patch.height).data;
    out.push(legendClass(c.label, c.description, await symbolImage(ctx, rgba, patch.width, patch.height, patch.dpi, type)));
  }
  return [{ $type: 'MapServerLegendGroup', Heading: renderer.heading, LegendClasses: out }];
}

/** The pixels of a PNG drawn at `width` x `height` (smoothly scaled when the sizes differ). */
function pngPixels(png: Uint8Array, width: number, height: number): Uint8ClampedArray {
  const img = new Image();
  img.src = Buffer.from(png);
  const c = createCanvas(width, height);
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0, width, height);
  return g.getImageData(0, 0, width, height).data;
}

async function rasterLegend(ctx: SoapContext, layer: RasterLayer, patch: Patch, type: ImageTypeRequest): Promise<SoapObject[]> {
  const rule = rasterLayerRule(layer);
  const { root } = await planServiceRule(layer.image, rule);
  const info = root.info;
  const entries = legendEntries(info, (band) => (rule === undefined ? layer.image.statistics[band] : info.statistics?.[band]));
  const out: SoapObject[] = [];
  for (const e of entries) {
    const png = Buffer.from(e.imageData, 'base64');
    let image: SoapObject;
    // The image service's swatch as it is when it is what was asked for; else drawn at the patch size.
    if ((type.format === 'png' || type.format === 'png32') && patch.width === SWATCH && patch.height === SWATCH) {
      const ret = await imageReturn(ctx, { bytes: new Uint8Array(png), contentType: 'image/png', ext: 'png' }, type.returnType);
      image = { $type: 'ImageResult', ...ret, ImageHeight: SWATCH, ImageWidth: SWATCH, ImageDPI: patch.dpi, ImageType: 'image/png' };
    } else {
      image = await symbolImage(ctx, pngPixels(png, patch.width, patch.height), patch.width, patch.height, patch.dpi, type);
    }
    out.push(legendClass(e.label, '', image));
  }
  const heading = info.bandCount >= 3 && info.colormap === undefined ? 'RGB' : 'Value';
  return [{ $type: 'MapServerLegendGroup', Heading: heading, LegendClasses: out }];
}

function layerIdsOf(service: MapService, v: SoapValue, path: string): number[] | undefined {
  if (!Array.isArray(v) || v.length === 0) return undefined;
  return (v as SoapValue[]).map((x, i) => {
    if (typeof x !== 'number') throw invalidArgument(`${path}[${i}]`, `${path}[${i}] must be a layer id`);
    layerOf(service, x, `${path}[${i}]`);
    return x;
  });
}

async function legends(
  ctx: SoapContext,
  ids: readonly number[],
  patchValue: SoapValue,
  typeValue: SoapValue,
  drawing?: ReadonlyMap<number, LayerDrawOptions>,
): Promise<SoapObject[]> {
  const patch = patchOf(patchValue, 'LegendPatch');
  const type = imageTypeOf(typeValue, 'ImageType');
  const out: SoapObject[] = [];
  for (const id of ids) {
    const layer = layerOf(ctx.service, id, 'LayerIDs');
    const groups =
      layer.kind === 'raster'
        ? await rasterLegend(ctx, layer, patch, type)
        : await featureLegend(ctx, layer, patch, type, drawing?.get(layer.id)?.renderer);
    out.push({ $type: 'MapServerLegendInfo', LayerID: layer.id, Name: layer.name, LegendGroups: groups });
  }
  return out;
}

const getLegendInfo: SoapHandler = async (ctx, args) => {
  checkMapName(ctx.service, args['MapName'], 'MapName');
  const ids = layerIdsOf(ctx.service, args['LayerIDs'], 'LayerIDs') ?? ctx.service.layers.map((l) => l.id);
  return result(await legends(ctx, ids, args['LegendPatch'], args['ImageType']));
};

/** GetLegendInfo2: the legend of what the MapDescription draws (layer visibility and scale ranges honoured). */
const getLegendInfo2: SoapHandler = async (ctx, args) => {
  const { service } = ctx;
  const md = args['MapDescription'];
  if (!isObject(md)) throw invalidArgument('MapDescription', 'MapDescription is required');
  checkMapName(service, md['Name'], 'MapDescription/Name');
  const drawn = await drawnMap(
    service,
    md,
    args['MapImageDisplay'],
    { mapDescription: 'MapDescription', imageDisplay: 'MapImageDisplay' },
    featureExtentResolver(service),
  );
  const drawing = layerDrawOptionsOf(service, md, 'MapDescription');
  const visible = visibleLayerIds(service, drawn.scale, drawing);
  const asked = layerIdsOf(service, args['LayerIDs'], 'LayerIDs');
  const ids = asked ? asked.filter((id) => visible.includes(id)) : visible;
  return result(await legends(ctx, ids, args['LegendPatch'], args['ImageType'], drawing));
};

export const drawHandlers: Record<string, SoapHandler> = {
  ExportMapImage: exportMapImage,
  ExportScaleBar: exportScaleBar,
  GetLegendInfo: getLegendInfo,
  GetLegendInfo2: getLegendInfo2,
};

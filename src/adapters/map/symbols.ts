/**
 * Feature layer renderers and symbols (Esri JSON, as configured on a layer) drawn on a 2D canvas
 * (@napi-rs/canvas: Skia, antialiased paths, dashes and text; prebuilt binaries).
 *
 * Renderers: `simple` (symbol, label), `classBreaks` (field, minValue, classBreakInfos with
 * classMinValue?/classMaxValue, defaultSymbol) and `uniqueValue` (field1..field3 joined by
 * fieldDelimiter, uniqueValueInfos, defaultSymbol). Symbols: esriSFS (solid, null, hollow, the six
 * hatches; outline), esriSLS (solid, dash, dot, dashdot, dashdotdot, null; width in points) and
 * esriSMS (circle, square, cross, x, diamond, triangle; size in points, angle, offsets, outline),
 * esriPMS and esriPFS (a base64 `imageData` picture, `width`/`height` in points; a picture fill
 * tiles it, with its outline).
 *
 * Sizes are in points (1/72 inch) and become pixels at the drawing's DPI: `pxPerPt = dpi / 72`.
 */
import { createCanvas, Image, type Canvas, type SKRSContext2D } from '@napi-rs/canvas';
import type { AttributeValue, FeatureTable, Geometry, RendererJson } from './model.js';

export type Rgba = readonly [number, number, number, number];
export type EsriSymbol = Readonly<Record<string, unknown>>;
export type GeometryKind = NonNullable<FeatureTable['geometryType']>;

const isRecord = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === 'object' && v !== null && !Array.isArray(v);
const numOr = (v: unknown, d: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : d);

/** An Esri JSON colour `[r, g, b, a]` (a 0..255), or undefined when absent/malformed. */
export function esriColor(v: unknown): Rgba | undefined {
  if (!Array.isArray(v) || v.length < 3) return undefined;
  const c = v.map((x) => (typeof x === 'number' && Number.isFinite(x) ? Math.max(0, Math.min(255, Math.round(x))) : 0));
  return [c[0]!, c[1]!, c[2]!, v.length > 3 ? c[3]! : 255];
}

export const css = (c: Rgba): string => `rgba(${c[0]},${c[1]},${c[2]},${c[3] / 255})`;

// ---------------------------------------------------------------------------------------------
// Renderers

export interface RendererClass {
  readonly symbol: EsriSymbol;
  readonly label: string;
  readonly description: string;
}

export interface Renderer {
  /** Attribute fields the renderer reads (to request them from the store). */
  readonly fields: readonly string[];
  /** The legend's heading (the field names, or '' for a simple renderer). */
  readonly heading: string;
  /** Classes in legend order. */
  readonly classes: readonly RendererClass[];
  /** The default class (values outside every class), when the renderer has one. */
  readonly defaultClass?: RendererClass;
  /** The symbol of a feature with these attributes (undefined: not drawn). */
  symbolOf(attributes: Readonly<Record<string, AttributeValue>>): EsriSymbol | undefined;
}

/** Decision: a layer without a usable renderer draws with these (the vendor's default-looking symbols). */
export function defaultSymbol(kind: GeometryKind | null): EsriSymbol {
  const outline = { type: 'esriSLS', style: 'esriSLSSolid', color: [110, 110, 110, 255], width: 0.4 };
  if (kind === 'polyline') return { type: 'esriSLS', style: 'esriSLSSolid', color: [76, 129, 205, 255], width: 1 };
  if (kind === 'polygon') return { type: 'esriSFS', style: 'esriSFSSolid', color: [190, 210, 255, 255], outline };
  return { type: 'esriSMS', style: 'esriSMSCircle', color: [76, 129, 205, 255], size: 6, outline };
}

/** Attribute lookup by field name, case-insensitive (stores keep their own casing). */
function attr(attributes: Readonly<Record<string, AttributeValue>>, field: string): AttributeValue | undefined {
  if (field in attributes) return attributes[field];
  const lower = field.toLowerCase();
  for (const k of Object.keys(attributes)) if (k.toLowerCase() === lower) return attributes[k];
  return undefined;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function classOf(info: unknown, kind: GeometryKind | null, label?: string): RendererClass {
  const o = isRecord(info) ? info : {};
  const symbol = isRecord(o['symbol']) ? o['symbol'] : defaultSymbol(kind);
  return { symbol, label: label ?? str(o['label']), description: str(o['description']) };
}

const valueText = (v: AttributeValue | undefined): string =>
  v === null || v === undefined ? '<Null>' : v instanceof Date ? v.toISOString() : typeof v === 'number' ? String(v) : String(v);

/** A renderer read from its Esri JSON; malformed parts fall back to the default symbol of `kind`. */
export function parseRenderer(json: RendererJson | undefined, kind: GeometryKind | null): Renderer {
  const base = parseRendererClasses(json, kind);
  // Marker rotation by attribute: `rotationExpression` "[FIELD]" (or `rotationField`), `rotationType`
  // arithmetic (counter-clockwise from east, the default) or geographic (clockwise from north).
  const expr = str(json?.['rotationExpression']) || str(json?.['rotationField']);
  const rotationField = /^\s*\[?\s*([^\]\s]+)\s*\]?\s*$/.exec(expr)?.[1];
  if (!rotationField) return base;
  const geographic = str(json?.['rotationType']).toLowerCase() === 'geographic';
  return {
    ...base,
    fields: [...base.fields, rotationField],
    symbolOf(attributes) {
      const symbol = base.symbolOf(attributes);
      const v = attr(attributes, rotationField);
      if (!symbol || typeof v !== 'number' || !Number.isFinite(v) || !isMarkerSymbol(symbol)) return symbol;
      return { ...symbol, angle: numOr(symbol['angle'], 0) + (geographic ? 90 - v : v) };
    },
  };
}

function parseRendererClasses(json: RendererJson | undefined, kind: GeometryKind | null): Renderer {
  const type = str(json?.['type']);
  if (json && type === 'classBreaks') {
    const field = str(json['field']);
    const infos = Array.isArray(json['classBreakInfos']) ? (json['classBreakInfos'] as unknown[]) : [];
    const minValue = numOr(json['minValue'], -Infinity);
    const breaks = infos.map((info, i) => {
      const o = isRecord(info) ? info : {};
      const max = numOr(o['classMaxValue'], Infinity);
      return { ...classOf(info, kind), max, min: typeof o['classMinValue'] === 'number' ? o['classMinValue'] : undefined, i };
    });
    const def = isRecord(json['defaultSymbol'])
      ? { symbol: json['defaultSymbol'], label: str(json['defaultLabel']) || '<all other values>', description: '' }
      : undefined;
    return {
      fields: field ? [field] : [],
      heading: field,
      classes: breaks,
      ...(def ? { defaultClass: def } : {}),
      symbolOf(attributes) {
        const v = attr(attributes, field);
        if (typeof v === 'number' && Number.isFinite(v)) {
          // Vendor semantics: the first class takes [minValue, max0], each next one (previous max, max];
          // an explicit classMinValue bounds a class from below (inclusive).
          let lower = minValue;
          for (const b of breaks) {
            const lo = b.min ?? lower;
            const inside = b.i === 0 || b.min !== undefined ? v >= lo && v <= b.max : v > lo && v <= b.max;
            if (inside) return b.symbol;
            lower = b.max;
          }
        }
        return def?.symbol;
      },
    };
  }
  if (json && type === 'uniqueValue') {
    const fields = [json['field1'], json['field2'], json['field3']].filter((f): f is string => typeof f === 'string' && f !== '');
    const delimiter = typeof json['fieldDelimiter'] === 'string' ? json['fieldDelimiter'] : ',';
    const infos = Array.isArray(json['uniqueValueInfos']) ? (json['uniqueValueInfos'] as unknown[]) : [];
    const classes = infos.map((info) => {
      const o = isRecord(info) ? info : {};
      const v = o['value'];
      const value = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
      return { ...classOf(info, kind, str(o['label']) || value), value };
    });
    const byValue = new Map<string, EsriSymbol>();
    for (const c of classes) if (!byValue.has(c.value)) byValue.set(c.value, c.symbol);
    const def = isRecord(json['defaultSymbol'])
      ? { symbol: json['defaultSymbol'], label: str(json['defaultLabel']) || '<all other values>', description: '' }
      : undefined;
    return {
      fields,
      heading: fields.join(delimiter),
      classes,
      ...(def ? { defaultClass: def } : {}),
      symbolOf(attributes) {
        const key = fields.map((f) => valueText(attr(attributes, f))).join(delimiter);
        return byValue.get(key) ?? def?.symbol;
      },
    };
  }
  // simple (or anything unreadable: the default symbol)
  const symbol = json && type === 'simple' && isRecord(json['symbol']) ? json['symbol'] : defaultSymbol(kind);
  const only: RendererClass = { symbol, label: json ? str(json['label']) : '', description: json ? str(json['description']) : '' };
  return { fields: [], heading: '', classes: [only], symbolOf: () => symbol };
}

// ---------------------------------------------------------------------------------------------
// Drawing

/** Screen transform: map (x, y) in the drawn SR -> canvas pixels (may be NaN when not transformable). */
export type ToScreen = (x: number, y: number) => readonly [number, number];

const LINE_DASHES: Readonly<Record<string, readonly number[]>> = {
  // Decision: dash lengths in multiples of the line width (at least 1 px), as the vendor's patterns scale.
  esriSLSDash: [4, 3],
  esriSLSDot: [1, 3],
  esriSLSDashDot: [4, 3, 1, 3],
  esriSLSDashDotDot: [4, 3, 1, 3, 1, 3],
  esriSLSShortDash: [3, 2],
  esriSLSShortDot: [1, 2],
  esriSLSLongDash: [8, 3],
};

/** Sets `ctx`'s stroke for an esriSLS; false when the line draws nothing (null style, transparent, no width). */
function setStroke(ctx: SKRSContext2D, line: unknown, pxPerPt: number): boolean {
  if (!isRecord(line)) return false;
  const style = str(line['style']) || 'esriSLSSolid';
  const color = esriColor(line['color']);
  if (style === 'esriSLSNull' || !color || color[3] === 0) return false;
  const width = Math.max(0, numOr(line['width'], 0.75)) * pxPerPt;
  if (!(width > 0)) return false;
  ctx.strokeStyle = css(color);
  ctx.lineWidth = width;
  ctx.lineJoin = 'round';
  const dash = LINE_DASHES[style];
  const unit = Math.max(1, width);
  ctx.setLineDash(dash ? dash.map((d) => d * unit) : []);
  ctx.lineCap = dash ? 'butt' : 'round';
  return true;
}

const HATCH = new Set([
  'esriSFSBackwardDiagonal',
  'esriSFSForwardDiagonal',
  'esriSFSCross',
  'esriSFSDiagonalCross',
  'esriSFSHorizontal',
  'esriSFSVertical',
]);

/** A hatch fill: lines of `color` every 8 points (Decision: the vendor's spacing look). */
function hatchPattern(ctx: SKRSContext2D, style: string, color: Rgba, pxPerPt: number) {
  const s = Math.max(4, Math.round(8 * pxPerPt * 0.75));
  const tile = createCanvas(s, s);
  const g = tile.getContext('2d');
  g.strokeStyle = css(color);
  g.lineWidth = Math.max(1, pxPerPt * 0.75);
  const line = (x0: number, y0: number, x1: number, y1: number): void => {
    g.beginPath();
    g.moveTo(x0, y0);
    g.lineTo(x1, y1);
    g.stroke();
  };
  if (style === 'esriSFSHorizontal' || style === 'esriSFSCross') line(0, s / 2, s, s / 2);
  if (style === 'esriSFSVertical' || style === 'esriSFSCross') line(s / 2, 0, s / 2, s);
  if (style === 'esriSFSForwardDiagonal' || style === 'esriSFSDiagonalCross') {
    line(-1, s + 1, s + 1, -1);
    line(-1, 1, 1, -1);
    line(s - 1, s + 1, s + 1, s - 1);
  }
  if (style === 'esriSFSBackwardDiagonal' || style === 'esriSFSDiagonalCross') {
    line(-1, -1, s + 1, s + 1);
    line(s - 1, -1, s + 1, 1);
    line(-1, s - 1, 1, s + 1);
  }
  return ctx.createPattern(tile, 'repeat');
}

function tracePath(ctx: SKRSContext2D, coords: readonly (readonly number[])[], toScreen: ToScreen, close: boolean): void {
  let started = false;
  for (const c of coords) {
    const [x, y] = toScreen(c[0]!, c[1]!);
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      started = false;
      continue;
    }
    if (!started) ctx.moveTo(x, y);
    else ctx.lineTo(x, y);
    started = true;
  }
  if (close && started) ctx.closePath();
}

const pictures = new Map<string, Image | null>();

/** The decoded picture of an esriPMS/esriPFS (cached by its data), or null when it does not decode. */
function pictureOf(symbol: EsriSymbol): Image | null {
  const data = str(symbol['imageData']);
  if (data === '') return null;
  let img = pictures.get(data);
  if (img === undefined) {
    try {
      img = new Image();
      img.src = Buffer.from(data, 'base64');
      if (!(img.width > 0 && img.height > 0)) img = null;
    } catch {
      img = null;
    }
    pictures.set(data, img);
    while (pictures.size > 256) pictures.delete(pictures.keys().next().value!);
  }
  return img;
}

/** Picture size in pixels: width/height in points, else the picture's own pixels taken at 96 DPI. */
function pictureSize(symbol: EsriSymbol, img: Image, pxPerPt: number): [number, number] {
  const w = numOr(symbol['width'], (img.width * 72) / 96) * pxPerPt;
  const h = numOr(symbol['height'], (img.height * 72) / 96) * pxPerPt;
  return [w, h];
}

export const isMarkerSymbol = (symbol: EsriSymbol): boolean => symbol['type'] === 'esriSMS' || symbol['type'] === 'esriPMS';

/** Draws a marker symbol (esriSMS, esriPMS) centred at (x, y) px. */
export function drawMarker(ctx: SKRSContext2D, symbol: EsriSymbol, x: number, y: number, pxPerPt: number): void {
  if (symbol['type'] === 'esriPMS') {
    const img = pictureOf(symbol);
    if (!img) return;
    const [w, h] = pictureSize(symbol, img, pxPerPt);
    ctx.save();
    ctx.translate(x + numOr(symbol['xoffset'], 0) * pxPerPt, y - numOr(symbol['yoffset'], 0) * pxPerPt);
    const angle = numOr(symbol['angle'], 0);
    if (angle) ctx.rotate((-angle * Math.PI) / 180);
    ctx.drawImage(img, -w / 2, -h / 2, w, h);
    ctx.restore();
    return;
  }
  const style = str(symbol['style']) || 'esriSMSCircle';
  const size = Math.max(0, numOr(symbol['size'], 8)) * pxPerPt;
  const color = esriColor(symbol['color']);
  const angle = numOr(symbol['angle'], 0);
  const dx = numOr(symbol['xoffset'], 0) * pxPerPt;
  const dy = numOr(symbol['yoffset'], 0) * pxPerPt;
  const r = size / 2;
  ctx.save();
  ctx.translate(x + dx, y - dy);
  // Decision: the REST JSON angle turns counter-clockwise.
  if (angle) ctx.rotate((-angle * Math.PI) / 180);
  ctx.beginPath();
  let lineOnly = false;
  switch (style) {
    case 'esriSMSSquare':
      ctx.rect(-r, -r, size, size);
      break;
    case 'esriSMSDiamond':
      ctx.moveTo(0, -r);
      ctx.lineTo(r, 0);
      ctx.lineTo(0, r);
      ctx.lineTo(-r, 0);
      ctx.closePath();
      break;
    case 'esriSMSTriangle': {
      const h = (size * Math.sqrt(3)) / 2;
      ctx.moveTo(0, -h / 2 - (size - h) / 2);
      ctx.lineTo(r, h / 2 + (size - h) / 2);
      ctx.lineTo(-r, h / 2 + (size - h) / 2);
      ctx.closePath();
      break;
    }
    case 'esriSMSCross':
      ctx.moveTo(-r, 0);
      ctx.lineTo(r, 0);
      ctx.moveTo(0, -r);
      ctx.lineTo(0, r);
      lineOnly = true;
      break;
    case 'esriSMSX':
      ctx.moveTo(-r, -r);
      ctx.lineTo(r, r);
      ctx.moveTo(r, -r);
      ctx.lineTo(-r, r);
      lineOnly = true;
      break;
    default:
      ctx.arc(0, 0, r, 0, 2 * Math.PI);
  }
  if (lineOnly) {
    // Cross and X are strokes: in the symbol's colour, the outline's width (1 pt without one).
    const outline = isRecord(symbol['outline']) ? symbol['outline'] : {};
    if (color && color[3] > 0) {
      ctx.strokeStyle = css(color);
      ctx.lineWidth = Math.max(1, numOr(outline['width'], 1) * pxPerPt);
      ctx.setLineDash([]);
      ctx.lineCap = 'butt';
      ctx.stroke();
    }
  } else {
    if (color && color[3] > 0) {
      ctx.fillStyle = css(color);
      ctx.fill();
    }
    if (setStroke(ctx, symbol['outline'], pxPerPt)) ctx.stroke();
  }
  ctx.restore();
}

/** Fills and outlines the current path with an esriSFS. */
function paintFill(ctx: SKRSContext2D, symbol: EsriSymbol, pxPerPt: number): void {
  const style = str(symbol['style']) || 'esriSFSSolid';
  const color = esriColor(symbol['color']);
  if (symbol['type'] === 'esriPFS') {
    const img = pictureOf(symbol);
    if (img) {
      const [w, h] = pictureSize(symbol, img, pxPerPt);
      const tile = createCanvas(Math.max(1, Math.round(w)), Math.max(1, Math.round(h)));
      tile.getContext('2d').drawImage(img, 0, 0, tile.width, tile.height);
      const pattern = ctx.createPattern(tile, 'repeat');
      if (pattern) {
        ctx.fillStyle = pattern;
        ctx.fill('evenodd');
      }
    }
  } else if (color && color[3] > 0) {
    if (style === 'esriSFSSolid') {
      ctx.fillStyle = css(color);
      ctx.fill('evenodd');
    } else if (HATCH.has(style)) {
      const p = hatchPattern(ctx, style, color, pxPerPt);
      if (p) {
        ctx.fillStyle = p;
        ctx.fill('evenodd');
      }
    }
  }
  if (setStroke(ctx, symbol['outline'], pxPerPt)) ctx.stroke();
}

/**
 * Draws `geometry` (coordinates in the drawn SR, mapped to pixels by `toScreen`) with `symbol`.
 * A symbol of another family than the geometry's is used sensibly: a fill symbol on a line strokes
 * with its outline, a line symbol on a polygon outlines it, a marker on a line or polygon marks its vertices.
 */
export function drawGeometry(ctx: SKRSContext2D, geometry: Geometry, symbol: EsriSymbol, toScreen: ToScreen, pxPerPt: number): void {
  const type = str(symbol['type']);
  const points = (coords: readonly (readonly number[])[]): void => {
    for (const c of coords) {
      const [x, y] = toScreen(c[0]!, c[1]!);
      if (Number.isFinite(x) && Number.isFinite(y)) drawMarker(ctx, symbol, x, y, pxPerPt);
    }
  };
  switch (geometry.type) {
    case 'Point':
      points([geometry.coordinates]);
      return;
    case 'MultiPoint':
      points(geometry.coordinates);
      return;
    case 'LineString':
    case 'MultiLineString': {
      const lines = geometry.type === 'LineString' ? [geometry.coordinates] : geometry.coordinates;
      if (isMarkerSymbol(symbol)) {
        for (const l of lines) points(l);
        return;
      }
      const line = type === 'esriSFS' ? symbol['outline'] : symbol;
      if (!setStroke(ctx, line, pxPerPt)) return;
      ctx.beginPath();
      for (const l of lines) tracePath(ctx, l, toScreen, false);
      ctx.stroke();
      return;
    }
    case 'Polygon':
    case 'MultiPolygon': {
      const polys = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
      if (isMarkerSymbol(symbol)) {
        for (const p of polys) for (const ring of p) points(ring);
        return;
      }
      for (const p of polys) {
        ctx.beginPath();
        for (const ring of p) tracePath(ctx, ring, toScreen, true);
        if (type === 'esriSLS') {
          if (setStroke(ctx, symbol, pxPerPt)) ctx.stroke();
        } else paintFill(ctx, symbol, pxPerPt);
      }
      return;
    }
  }
}

/**
 * The symbol `symbol` recoloured for a selection: fills, lines and markers in `color` (Decision:
 * polygons are outlined 2 pt in the selection colour and keep no fill, lines and markers keep their
 * shape and size, at least 2 pt wide).
 */
export function selectionSymbol(symbol: EsriSymbol, kind: GeometryKind | null, color: Rgba): EsriSymbol {
  const c = [...color];
  if (kind === 'polygon')
    return { type: 'esriSFS', style: 'esriSFSNull', outline: { type: 'esriSLS', style: 'esriSLSSolid', color: c, width: 2 } };
  if (kind === 'polyline') {
    const w = isRecord(symbol) ? numOr(symbol['width'], 1) : 1;
    return { type: 'esriSLS', style: 'esriSLSSolid', color: c, width: Math.max(2, w) };
  }
  return { ...symbol, type: 'esriSMS', color: c, outline: { type: 'esriSLS', style: 'esriSLSSolid', color: c, width: 1 } };
}

export interface PatchShapes {
  /** LegendPatch AreaPatch geometry (a polygon) for fill symbols, scaled into the patch. */
  readonly area?: Geometry;
  /** LegendPatch LinePatch geometry (a line) for line symbols, scaled into the patch. */
  readonly line?: Geometry;
  /** Keep the shape's aspect ratio (PreserveAspectRatio). */
  readonly preserveAspect?: boolean;
}

/** A transform putting `g`'s bounding box into the patch (inset by `inset` px), y up. */
function patchTransform(g: Geometry, width: number, height: number, inset: number, preserve: boolean): ToScreen | undefined {
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  const walk = (v: unknown): void => {
    if (Array.isArray(v) && typeof v[0] === 'number') {
      xmin = Math.min(xmin, v[0]);
      xmax = Math.max(xmax, v[0]);
      ymin = Math.min(ymin, v[1] as number);
      ymax = Math.max(ymax, v[1] as number);
    } else if (Array.isArray(v)) for (const c of v) walk(c);
  };
  walk(g.coordinates);
  if (!(xmin <= xmax)) return undefined;
  const w = width - 2 * inset;
  const h = height - 2 * inset;
  let sx = xmax > xmin ? w / (xmax - xmin) : 1;
  let sy = ymax > ymin ? h / (ymax - ymin) : 1;
  if (preserve) sx = sy = Math.min(sx, sy);
  const ox = inset + (w - (xmax - xmin) * sx) / 2;
  const oy = inset + (h - (ymax - ymin) * sy) / 2;
  return (x, y) => [ox + (x - xmin) * sx, oy + (ymax - y) * sy];
}

/**
 * A legend patch: `symbol` drawn on a transparent canvas of `width` x `height` px: a rectangle
 * (inset by half the outline) or the AreaPatch shape for fills, a horizontal line or the LinePatch
 * shape for lines, a centred marker for markers.
 */
export function drawPatch(symbol: EsriSymbol, width: number, height: number, pxPerPt: number, shapes: PatchShapes = {}): Canvas {
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  const type = str(symbol['type']);
  if (isMarkerSymbol(symbol)) {
    drawMarker(ctx, symbol, width / 2, height / 2, pxPerPt);
  } else if (type === 'esriSLS') {
    const w = numOr(symbol['width'], 0.75) * pxPerPt;
    const t = shapes.line ? patchTransform(shapes.line, width, height, w / 2, shapes.preserveAspect ?? false) : undefined;
    if (shapes.line && t) drawGeometry(ctx, shapes.line, symbol, t, pxPerPt);
    else if (setStroke(ctx, symbol, pxPerPt)) {
      ctx.beginPath();
      ctx.moveTo(0, height / 2);
      ctx.lineTo(width, height / 2);
      ctx.stroke();
    }
  } else {
    const outline = isRecord(symbol['outline']) ? numOr(symbol['outline']['width'], 0) * pxPerPt : 0;
    const inset = Math.min(width, height) / 2 > outline ? outline / 2 : 0;
    const t = shapes.area ? patchTransform(shapes.area, width, height, inset, shapes.preserveAspect ?? false) : undefined;
    if (shapes.area && t) drawGeometry(ctx, shapes.area, symbol, t, pxPerPt);
    else {
      ctx.beginPath();
      ctx.rect(inset, inset, width - 2 * inset, height - 2 * inset);
      paintFill(ctx, symbol, pxPerPt);
    }
  }
  return canvas;
}

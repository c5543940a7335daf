/**
 * Drawing a map: the visible layers of a map service over an extent at a size, bottom to top (the
 * last layer first, layer 0 on top), over the background colour.
 *
 * - Raster layers go through the engine exactly as the image service draws them: `renderOnGrid`
 *   with the layer's rule on the drawn grid, then `toDisplayBlock` / `displayStatistics` (the
 *   colormap expanded as the PNG encoder does), NoData transparent.
 * - Feature layers: the features whose envelope meets the drawn extent (plus a margin for symbols
 *   that reach in from outside), in the layer's definition expression, drawn with the layer's
 *   renderer (symbols.ts) with @napi-rs/canvas. Coordinates are reprojected when the drawing's SR
 *   is not the map's. Selected features are drawn on top in the selection colour.
 * - Compositing: one canvas holds the map. A raster layer's RGBA (straight alpha) is put on an
 *   intermediate canvas with putImageData and drawn over the map with drawImage (Skia's
 *   premultiplied source-over: opaque raster pixels are copied exactly, NoData shows what is below).
 *
 * - Antialiasing: Decision: paths and text are antialiased (Skia's default). The vendor's
 *   Pro-based map services default to antialiasing "Fast" for features and "Force" for text;
 *   ArcMap-era services defaulted to none for features. We follow the current vendor defaults.
 * - Decision: feature layers draw at most MAX_DRAWN_FEATURES features each (not maxRecordCount,
 *   which bounds query answers, not drawings).
 * - Custom graphics draw over every layer; selections over their own layer. Rotation turns the
 *   finished map about the image centre (bilinear).
 *
 * The result is straight-alpha RGBA (`Uint8ClampedArray`, 4 bytes per pixel, row-major) of the
 * drawn size.
 */
import { createCanvas, ImageData, PDFDocument, SvgExportFlag, type SKRSContext2D } from '@napi-rs/canvas';
import BufferOp from 'jsts/org/locationtech/jts/operation/buffer/BufferOp.js';
import GeometryFactory from 'jsts/org/locationtech/jts/geom/GeometryFactory.js';
import GeoJSONReader from 'jsts/org/locationtech/jts/io/GeoJSONReader.js';
import GeoJSONWriter from 'jsts/org/locationtech/jts/io/GeoJSONWriter.js';
import { EngineError } from '../../core/errors.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { rect } from '../../core/rect.js';
import type { ResamplingMethod } from '../../graph/types.js';
import { colorize, colormapLut } from '../../functions/color/colormap-to-rgb.js';
import { encodeJpeg } from '../../io/encode-jpeg.js';
import { encodePng } from '../../io/encode-png.js';
import { encodeGeoTiff } from '../../io/encode-tiff.js';
import { SERVED_PNG } from '../image/export-image.js';
import { displayStatistics, renderOnGrid, resolveServiceRule, toDisplayBlock } from '../image/render-request.js';
import type { ImageServices } from '../image/service.js';
import { transformer } from '../image/query-geometry.js';
import type { DrawnMap } from './view.js';
import { extentIn } from './view.js';
import type { FeatureLayer, FeatureRow, Geometry, MapLayer, MapService, RasterLayer, RendererJson } from './model.js';
import { expressionFields, labelAnchor, labelText, placeLabels, type LabelClass, type LabelJob } from './labels.js';
import { fontOf, type TextStyle } from './scale-bar.js';
import { css, drawGeometry, parseRenderer, selectionSymbol, type EsriSymbol, type Rgba, type ToScreen } from './symbols.js';

/** What a request says about one layer (a SOAP LayerDescription, read). */
export interface LayerDrawOptions {
  /** Overrides the layer's default visibility. */
  readonly visible?: boolean;
  /** A where clause restricting the features drawn. */
  readonly definitionExpression?: string;
  /** Object ids drawn on top in the selection colour. */
  readonly selectionFeatures?: readonly number[];
  /** The layer's own selection colour (else the map's). */
  readonly selectionColor?: Rgba;
  /** A symbol for the selected features (LayerDescription SelectionSymbol with SetSelectionSymbol), instead of the colour. */
  readonly selectionSymbol?: EsriSymbol;
  /**
   * ShowSelectionBuffer: the selected features buffered by `distance` (map units of the service's
   * SR), drawn under the selection with `symbol` (SelectionBufferSymbol) or a default.
   */
  readonly selectionBuffer?: { readonly distance: number; readonly symbol?: EsriSymbol };
  /** Label classes drawn for the layer (ShowLabels); none: no labels. */
  readonly labels?: readonly LabelClass[];
  /** A renderer replacing the layer's (a LayerDescription's DrawingDescription), Esri JSON. */
  readonly renderer?: RendererJson;
  /** Layer transparency in percent (0 opaque .. 100 invisible), applied to the layer as a whole. */
  readonly transparency?: number;
  /** Error path of this layer's description (e.g. `MapDescription/LayerDescriptions[2]`). */
  readonly path?: string;
}

export interface DrawMapOptions {
  /** Per layer id. Layers without an entry draw with their defaults. */
  readonly layers?: ReadonlyMap<number, LayerDrawOptions>;
  /** Default: the service's background colour. */
  readonly backgroundColor?: Rgba;
  /** The map's selection colour. Decision: default cyan, the vendor's default selection colour. */
  readonly selectionColor?: Rgba;
  /** Pixels of exactly this RGB become fully transparent. */
  readonly transparentColor?: Rgba;
  /** Graphics drawn over the layers (MapDescription CustomGraphics), in the drawn SR. */
  readonly graphics?: readonly MapGraphic[];
  /**
   * MapDescription Rotation in degrees, counter-clockwise (Decision: as the vendor's data frame
   * rotation): the map turns about the image centre; the scale and centre stay.
   */
  readonly rotation?: number;
  /**
   * Layer ids top to bottom (MapDescription HonorLayerReordering: the LayerDescriptions' order);
   * layers not listed follow in id order. Default: id order (layer 0 on top).
   */
  readonly drawOrder?: readonly number[];
  /** Raster resampling (default nearest, the image service's default). */
  readonly method?: ResamplingMethod;
  readonly signal?: AbortSignal;
}

export interface DrawnImage {
  readonly width: number;
  readonly height: number;
  /** Straight (not premultiplied) RGBA, 4 bytes per pixel, row-major. */
  readonly rgba: Uint8ClampedArray;
  /** Layer ids drawn (visible at the drawn scale), in id order. */
  readonly visibleLayerIds: readonly number[];
  /** True when every pixel is fully opaque. */
  readonly opaque: boolean;
}

export const DEFAULT_SELECTION_COLOR: Rgba = [0, 255, 255, 255];

/** A custom graphic: a geometry with a symbol, or a text at a point (coordinates in the drawn SR). */
export type MapGraphic =
  | { readonly kind: 'geometry'; readonly geometry: Geometry; readonly symbol: EsriSymbol }
  | {
      readonly kind: 'text';
      readonly x: number;
      readonly y: number;
      readonly text: string;
      readonly style: TextStyle;
      /** Degrees counter-clockwise. */
      readonly angle: number;
      readonly align: 'left' | 'center' | 'right';
    };

function drawGraphics(ctx: SKRSContext2D, graphics: readonly MapGraphic[], drawn: DrawnMap): void {
  const pxPerPt = drawn.dpi / 72;
  const { xmin, ymax } = drawn.extent;
  const res = drawn.resolution;
  const toScreen: ToScreen = (x, y) => [(x - xmin) / res, (ymax - y) / res];
  for (const g of graphics) {
    if (g.kind === 'geometry') {
      drawGeometry(ctx, g.geometry, g.symbol, toScreen, pxPerPt);
      continue;
    }
    const [x, y] = toScreen(g.x, g.y);
    if (!Number.isFinite(x) || !Number.isFinite(y) || g.text === '') continue;
    ctx.save();
    ctx.translate(x, y);
    if (g.angle) ctx.rotate((-g.angle * Math.PI) / 180);
    ctx.font = fontOf(g.style, pxPerPt);
    ctx.fillStyle = css(g.style.color);
    ctx.textAlign = g.align;
    ctx.textBaseline = 'middle';
    ctx.fillText(g.text, 0, 0);
    ctx.restore();
  }
}

/** Whether a layer shows at `scale`: minScale is the smallest scale (most zoomed out), maxScale the largest; 0 = no limit. */
export function inScaleRange(layer: Pick<MapLayer, 'minScale' | 'maxScale'>, scale: number): boolean {
  // Decision: a relative tolerance of 1e-9 so a scale computed from the same numbers is not lost at the boundary.
  const eps = 1e-9 * scale;
  if (layer.minScale > 0 && scale > layer.minScale + eps) return false;
  if (layer.maxScale > 0 && scale < layer.maxScale - eps) return false;
  return true;
}

/** The ids of the layers drawn at `scale` (visibility from `layers`, else the layer's default). */
export function visibleLayerIds(service: MapService, scale: number, layers?: ReadonlyMap<number, LayerDrawOptions>): number[] {
  return service.layers.filter((l) => (layers?.get(l.id)?.visible ?? l.defaultVisibility) && inScaleRange(l, scale)).map((l) => l.id);
}

/** The rule a raster layer draws with (its configured rule, resolved against the engine). */
export function rasterLayerRule(layer: RasterLayer): unknown {
  const r = layer.renderingRule;
  return resolveServiceRule(layer.image, r === undefined || r === null ? undefined : typeof r === 'string' ? r : JSON.stringify(r));
}

/**
 * A rendered raster as straight RGBA for display: 8-bit as the image service's PNG would show it
 * (stretched with the display statistics; colormaps expanded; 2 bands: the first; more than 3:
 * the first three), NoData alpha 0.
 */
export function displayRgba(
  block: PixelBlock,
  info: RasterInfo,
  statistics: Parameters<typeof toDisplayBlock>[1],
): Uint8ClampedArray<ArrayBuffer> {
  const n = block.mask.length;
  const out = new Uint8ClampedArray(4 * n);
  let bands = block.bands;
  if (bands.length === 2 || bands.length > 3) bands = bands.slice(0, bands.length === 2 ? 1 : 3);
  if (bands.length === 1 && info.colormap !== undefined) {
    const r = new Uint8Array(n);
    const g = new Uint8Array(n);
    const b = new Uint8Array(n);
    const a = new Uint8Array(n);
    colorize(bands[0]!, block.mask, n, colormapLut(info.colormap), r, g, b, a, false);
    for (let i = 0; i < n; i++) {
      const o = 4 * i;
      out[o] = r[i]!;
      out[o + 1] = g[i]!;
      out[o + 2] = b[i]!;
      out[o + 3] = a[i]!;
    }
    return out;
  }
  const d = toDisplayBlock({ ...block, bands }, statistics?.slice(0, bands.length));
  const r = d.bands[0] as Uint8Array;
  const g = (d.bands[1] ?? r) as Uint8Array;
  const b = (d.bands[2] ?? r) as Uint8Array;
  const mask = d.mask;
  for (let i = 0; i < n; i++) {
    const o = 4 * i;
    if (mask[i] === 0) continue;
    out[o] = r[i]!;
    out[o + 1] = g[i]!;
    out[o + 2] = b[i]!;
    out[o + 3] = 255;
  }
  return out;
}

async function drawRasterLayer(
  ctx: SKRSContext2D,
  services: ImageServices,
  layer: RasterLayer,
  drawn: DrawnMap,
  options: DrawMapOptions,
): Promise<void> {
  const rule = rasterLayerRule(layer);
  const grid = { spatialReference: drawn.spatialReference, extent: drawn.extent, width: drawn.width, height: drawn.height };
  const image = await renderOnGrid(services, layer.image, {
    rule,
    grid,
    method: options.method ?? 'nearest',
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const rgba = displayRgba(image.block, image.info, displayStatistics(image, layer.image, rule));
  const tmp = createCanvas(drawn.width, drawn.height);
  tmp.getContext('2d').putImageData(new ImageData(rgba, drawn.width, drawn.height), 0, 0);
  ctx.drawImage(tmp, 0, 0);
}

const jstsReader = new GeoJSONReader(new GeometryFactory());
const jstsWriter = new GeoJSONWriter();

/** `g` buffered by `distance` in its own units (jsts). */
function bufferedGeometry(g: Geometry, distance: number): Geometry {
  const b = BufferOp.bufferOp(jstsReader.read(g), distance) as unknown;
  return jstsWriter.write(b as Parameters<GeoJSONWriter['write']>[0]) as unknown as Geometry;
}

const ringOf = (e: { xmin: number; ymin: number; xmax: number; ymax: number }): Geometry => ({
  type: 'Polygon',
  coordinates: [
    [
      [e.xmin, e.ymin],
      [e.xmax, e.ymin],
      [e.xmax, e.ymax],
      [e.xmin, e.ymax],
      [e.xmin, e.ymin],
    ],
  ],
});

/** Largest reach of a symbol beyond its geometry, in points (marker size and offsets, line widths). */
function symbolReach(symbols: readonly EsriSymbol[]): number {
  let m = 0;
  for (const s of symbols) {
    const n = (k: string, o: Readonly<Record<string, unknown>> = s): number => (typeof o[k] === 'number' ? Math.abs(o[k]) : 0);
    const outline = typeof s['outline'] === 'object' && s['outline'] !== null ? (s['outline'] as Record<string, unknown>) : {};
    m = Math.max(m, n('size') / 2 + Math.max(n('xoffset'), n('yoffset')) + Math.max(n('width'), n('height')) / 2 + n('width', outline) / 2);
  }
  return m;
}

/** Decision: features drawn per layer at most (a larger store is drawn up to this many, in id order). */
export const MAX_DRAWN_FEATURES = 2_000_000;

async function drawFeatureLayer(
  ctx: SKRSContext2D,
  service: MapService,
  layer: FeatureLayer,
  drawn: DrawnMap,
  options: DrawMapOptions,
): Promise<LabelJob[]> {
  const kind = layer.table.geometryType;
  const lo = options.layers?.get(layer.id);
  const renderer = parseRenderer(lo?.renderer ?? layer.renderer, kind);
  const pxPerPt = drawn.dpi / 72;
  const symbols = [...renderer.classes.map((c) => c.symbol), ...(renderer.defaultClass ? [renderer.defaultClass.symbol] : [])];
  const margin = (symbolReach(symbols) * pxPerPt + 2) * drawn.resolution;
  const e = drawn.extent;
  const grown = { xmin: e.xmin - margin, ymin: e.ymin - margin, xmax: e.xmax + margin, ymax: e.ymax + margin };
  const queryExtent = extentIn(grown, drawn.spatialReference, service.spatialReference);
  const toDrawn = transformer(service.spatialReference, drawn.spatialReference);
  const { xmin, ymax } = e;
  const res = drawn.resolution;
  const toScreen: ToScreen = (x, y) => {
    const [X, Y] = toDrawn(x, y);
    return [(X - xmin) / res, (ymax - Y) / res];
  };
  const where = lo?.definitionExpression?.trim();
  const path = lo?.path ?? `LayerDescription`;
  // Where-clause errors name the field the clause came from (the store words them for a QueryFilter).
  const named = (e: unknown): never => {
    if (where && e instanceof EngineError && e.code === 'INVALID_ARGUMENT') {
      throw new EngineError(e.code, e.message, { path: `${path}/DefinitionExpression`, details: e.details, cause: e });
    }
    throw e;
  };
  let rows: FeatureRow[];
  try {
    rows = await layer.table.query({
      spatial: { geometry: ringOf(queryExtent), relation: 'envelopeIntersects' },
      ...(where ? { where } : {}),
      outFields: renderer.fields.length > 0 ? renderer.fields : [layer.table.objectIdField],
      returnGeometry: true,
      limit: MAX_DRAWN_FEATURES,
      path,
    });
  } catch (e) {
    named(e);
    throw e;
  }
  const symbolById = new Map<number, EsriSymbol>();
  for (const row of rows) {
    if (options.signal?.aborted) throw new EngineError('ABORTED', 'the request was aborted');
    const symbol = renderer.symbolOf(row.attributes);
    if (!symbol || !row.geometry) continue;
    symbolById.set(row.id, symbol);
    drawGeometry(ctx, row.geometry, symbol, toScreen, pxPerPt);
  }
  const selected = lo?.selectionFeatures;
  if (selected && selected.length > 0) {
    const color = lo?.selectionColor ?? options.selectionColor ?? DEFAULT_SELECTION_COLOR;
    const sel = await layer.table.query({
      objectIds: selected,
      ...(where ? { where } : {}),
      outFields: renderer.fields.length > 0 ? renderer.fields : [layer.table.objectIdField],
      returnGeometry: true,
      limit: MAX_DRAWN_FEATURES,
      path,
    });
    const buffer = lo?.selectionBuffer;
    if (buffer && buffer.distance > 0) {
      // Decision: the buffer's default symbol is the selection colour at 25 % over a 1 pt outline of it.
      const c = [...color];
      const symbol = buffer.symbol ?? {
        type: 'esriSFS',
        style: 'esriSFSSolid',
        color: [c[0], c[1], c[2], Math.round(c[3]! / 4)],
        outline: { type: 'esriSLS', style: 'esriSLSSolid', color: c, width: 1 },
      };
      for (const row of sel)
        if (row.geometry) drawGeometry(ctx, bufferedGeometry(row.geometry, buffer.distance), symbol, toScreen, pxPerPt);
    }
    for (const row of sel) {
      if (!row.geometry) continue;
      const base = symbolById.get(row.id) ?? renderer.symbolOf(row.attributes) ?? renderer.classes[0]!.symbol;
      drawGeometry(ctx, row.geometry, lo?.selectionSymbol ?? selectionSymbol(base, kind, color), toScreen, pxPerPt);
    }
  }
  // Labels: placed later, over every layer.
  const jobs: LabelJob[] = [];
  for (const cls of lo?.labels ?? []) {
    if (!inScaleRange(cls, drawn.scale)) continue;
    const clauses = [where, cls.where?.trim()].filter((w): w is string => !!w);
    let labelled: FeatureRow[];
    try {
      labelled = await layer.table.query({
        spatial: { geometry: ringOf(queryExtent), relation: 'envelopeIntersects' },
        ...(clauses.length === 1
          ? { where: clauses[0]! }
          : clauses.length > 1
            ? { where: clauses.map((w) => `(${w})`).join(' AND ') }
            : {}),
        outFields: [layer.table.objectIdField, ...expressionFields(cls.expression)],
        returnGeometry: true,
        limit: MAX_DRAWN_FEATURES,
        path,
      });
    } catch (e) {
      named(e);
      throw e;
    }
    for (const row of labelled) {
      const a = row.geometry ? labelAnchor(row.geometry) : undefined;
      if (!a) continue;
      const [x, y] = toDrawn(a.x, a.y);
      jobs.push({ text: labelText(cls.expression, row.attributes), x, y, at: a.at, style: cls.style });
    }
  }
  return jobs;
}

/** Draws the map. `services` is the site's image service registry (render slots, shared rasters). */
export async function drawMap(
  services: ImageServices,
  service: MapService,
  drawn: DrawnMap,
  options: DrawMapOptions = {},
): Promise<DrawnImage> {
  const { width, height } = drawn;
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  ctx.imageSmoothingEnabled = false;
  const bg = options.backgroundColor ?? service.backgroundColor;
  if (bg[3] > 0) {
    ctx.fillStyle = css(bg);
    ctx.fillRect(0, 0, width, height);
  }
  const ids = visibleLayerIds(service, drawn.scale, options.layers);
  if (options.drawOrder && options.drawOrder.length > 0) {
    const rank = (id: number): number => {
      const i = options.drawOrder!.indexOf(id);
      return i < 0 ? options.drawOrder!.length + id : i;
    };
    ids.sort((a, b) => rank(a) - rank(b));
  }
  const turn = (((options.rotation ?? 0) % 360) + 360) % 360;
  if (turn !== 0) {
    // The unrotated map of the rotated view's bounding box (same centre and resolution), turned onto the image.
    const a = (turn * Math.PI) / 180;
    const bw = Math.ceil(Math.abs(width * Math.cos(a)) + Math.abs(height * Math.sin(a))) + 2;
    const bh = Math.ceil(Math.abs(width * Math.sin(a)) + Math.abs(height * Math.cos(a))) + 2;
    const cx = (drawn.extent.xmin + drawn.extent.xmax) / 2;
    const cy = (drawn.extent.ymin + drawn.extent.ymax) / 2;
    const r = drawn.resolution;
    const big: DrawnMap = {
      ...drawn,
      width: bw,
      height: bh,
      extent: { xmin: cx - (bw * r) / 2, ymin: cy - (bh * r) / 2, xmax: cx + (bw * r) / 2, ymax: cy + (bh * r) / 2 },
    };
    const { transparentColor: _t, ...rest } = options;
    const unrotated = await drawMap(services, service, big, { ...rest, rotation: 0 });
    const src = createCanvas(bw, bh);
    src.getContext('2d').putImageData(new ImageData(unrotated.rgba, bw, bh), 0, 0);
    ctx.imageSmoothingEnabled = true;
    ctx.save();
    ctx.translate(width / 2, height / 2);
    ctx.rotate(-a);
    ctx.drawImage(src, -bw / 2, -bh / 2);
    ctx.restore();
  }
  const labels: LabelJob[][] = [];
  for (let k = turn !== 0 ? -1 : ids.length - 1; k >= 0; k--) {
    const layer = service.layers.find((l) => l.id === ids[k])!;
    const transparency = Math.max(0, Math.min(100, options.layers?.get(layer.id)?.transparency ?? 0));
    if (transparency >= 100) continue;
    // A transparent layer is drawn on its own canvas first, then blended as a whole (overlapping
    // features of the layer do not show through each other).
    const target = transparency > 0 ? createCanvas(width, height) : undefined;
    const c = target ? target.getContext('2d') : ctx;
    if (layer.kind === 'raster') await drawRasterLayer(c, services, layer, drawn, options);
    else labels[k] = await drawFeatureLayer(c, service, layer, drawn, options);
    if (target) {
      ctx.globalAlpha = 1 - transparency / 100;
      ctx.drawImage(target, 0, 0);
      ctx.globalAlpha = 1;
    }
  }
  const jobs = labels.flatMap((l) => l ?? []);
  if (jobs.length > 0) {
    // Layer 0's labels first: they win conflicts.
    const { xmin, ymax } = drawn.extent;
    const r = drawn.resolution;
    placeLabels(ctx, jobs, (x, y) => [(x - xmin) / r, (ymax - y) / r], width, height, drawn.dpi / 72);
  }
  if (turn === 0 && options.graphics && options.graphics.length > 0) drawGraphics(ctx, options.graphics, drawn);
  const rgba = ctx.getImageData(0, 0, width, height).data;
  const t = options.transparentColor;
  let opaque = true;
  for (let i = 0; i < rgba.length; i += 4) {
    if (t && rgba[i] === t[0] && rgba[i + 1] === t[1] && rgba[i + 2] === t[2]) rgba[i + 3] = 0;
    if (rgba[i + 3] !== 255) opaque = false;
  }
  return { width, height, rgba, visibleLayerIds: ids, opaque };
}

// ---------------------------------------------------------------------------------------------
// Encoding

/** The image formats maps, scale bars and legend patches are written in. */
export type MapImageFormat = 'png' | 'png24' | 'png32' | 'jpg' | 'jpgpng' | 'gif' | 'bmp' | 'tiff' | 'pdf' | 'svg';

export interface EncodedMapImage {
  readonly bytes: Uint8Array;
  readonly contentType: string;
  readonly ext: 'png' | 'jpg' | 'gif' | 'bmp' | 'tif' | 'pdf' | 'svg';
}

/** Straight RGBA pixels and what they cover (a drawn map's grid georeferences TIFF output). */
export interface RgbaImage {
  readonly width: number;
  readonly height: number;
  readonly rgba: Uint8ClampedArray;
  /** DPI the image was drawn at (PDF page size). */
  readonly dpi: number;
  readonly grid?: Pick<DrawnMap, 'extent' | 'spatialReference' | 'resolution'>;
}

function isOpaque(rgba: Uint8ClampedArray): boolean {
  for (let i = 3; i < rgba.length; i += 4) if (rgba[i] !== 255) return false;
  return true;
}

function blockOf(img: RgbaImage, withAlpha: boolean): { block: PixelBlock; info: RasterInfo } {
  const n = img.width * img.height;
  const nb = withAlpha ? 4 : 3;
  const bands = Array.from({ length: nb }, () => new Uint8Array(n));
  const src = img.rgba;
  for (let b = 0; b < nb; b++) {
    const plane = bands[b]!;
    for (let i = 0; i < n; i++) plane[i] = src[4 * i + b]!;
  }
  const block: PixelBlock = { rect: rect(0, 0, img.width, img.height), pixelType: 'U8', bands, mask: new Uint8Array(n).fill(1) };
  const g = img.grid;
  const info: RasterInfo = {
    width: img.width,
    height: img.height,
    bandCount: nb,
    pixelType: 'U8',
    extent: g ? g.extent : { xmin: 0, ymin: 0, xmax: img.width, ymax: img.height },
    cellSize: g ? { x: g.resolution, y: g.resolution } : { x: 1, y: 1 },
    ...(g ? { spatialReference: g.spatialReference } : {}),
  };
  return { block, info };
}

function canvasOf(img: RgbaImage) {
  const c = createCanvas(img.width, img.height);
  c.getContext('2d').putImageData(new ImageData(new Uint8ClampedArray(img.rgba), img.width, img.height), 0, 0);
  return c;
}

/** A 24-bit bottom-up BMP (BITMAPINFOHEADER). Decision: BMP/DIB carry no alpha; transparent pixels keep their colour. */
function encodeBmp(img: RgbaImage): Uint8Array {
  const rowBytes = Math.ceil((img.width * 3) / 4) * 4;
  const size = 54 + rowBytes * img.height;
  const out = new Uint8Array(size);
  const v = new DataView(out.buffer);
  out[0] = 0x42;
  out[1] = 0x4d;
  v.setUint32(2, size, true);
  v.setUint32(10, 54, true);
  v.setUint32(14, 40, true);
  v.setInt32(18, img.width, true);
  v.setInt32(22, img.height, true);
  v.setUint16(26, 1, true);
  v.setUint16(28, 24, true);
  v.setUint32(34, rowBytes * img.height, true);
  const ppm = Math.round(img.dpi / 0.0254);
  v.setInt32(38, ppm, true);
  v.setInt32(42, ppm, true);
  for (let y = 0; y < img.height; y++) {
    let o = 54 + (img.height - 1 - y) * rowBytes;
    for (let x = 0; x < img.width; x++) {
      const s = 4 * (y * img.width + x);
      out[o++] = img.rgba[s + 2]!;
      out[o++] = img.rgba[s + 1]!;
      out[o++] = img.rgba[s]!;
    }
  }
  return out;
}

/**
 * Encodes straight RGBA in `format`: PNG and JPEG with the engine's encoders (the image service's
 * PNG settings); png and png24 are RGB when every pixel is opaque, else RGBA; png32 is RGBA always;
 * jpgpng is JPEG when opaque, else PNG; GIF with the canvas's encoder; TIFF as a GeoTIFF (RGB or
 * RGBA; georeferenced when `img.grid` is given); BMP 24-bit; PDF one page of the image's size at
 * its DPI; SVG an SVG document of the image's size. Decision: PDF and SVG embed the drawn image
 * (the map is drawn once, as pixels, for every format).
 */
export async function encodeRgba(img: RgbaImage, format: MapImageFormat, quality = 75): Promise<EncodedMapImage> {
  const opaque = isOpaque(img.rgba);
  switch (format) {
    case 'jpg':
    case 'jpgpng':
      if (format === 'jpg' || opaque) {
        const { block, info } = blockOf(img, false);
        return { bytes: encodeJpeg(block, info, { quality }), contentType: 'image/jpeg', ext: 'jpg' };
      }
      return encodeRgba(img, 'png32', quality);
    case 'png':
    case 'png24':
    case 'png32': {
      const { block, info } = blockOf(img, format === 'png32' || !opaque);
      return { bytes: encodePng(block, info, SERVED_PNG), contentType: 'image/png', ext: 'png' };
    }
    case 'tiff': {
      const { block, info } = blockOf(img, !opaque);
      return { bytes: encodeGeoTiff(block, info, { compress: 'deflate', statistics: false }), contentType: 'image/tiff', ext: 'tif' };
    }
    case 'bmp':
      return { bytes: encodeBmp(img), contentType: 'image/bmp', ext: 'bmp' };
    case 'gif':
      return { bytes: new Uint8Array(await canvasOf(img).encode('gif')), contentType: 'image/gif', ext: 'gif' };
    case 'pdf': {
      const doc = new PDFDocument({ title: 'Map', creator: 'rasterflow' });
      const k = 72 / img.dpi;
      const page = doc.beginPage(img.width * k, img.height * k) as unknown as SKRSContext2D;
      page.scale(k, k);
      page.drawImage(canvasOf(img), 0, 0);
      doc.endPage();
      return { bytes: new Uint8Array(doc.close()), contentType: 'application/pdf', ext: 'pdf' };
    }
    case 'svg': {
      const svg = createCanvas(img.width, img.height, SvgExportFlag.NoPrettyXML);
      svg.getContext('2d').drawImage(canvasOf(img), 0, 0);
      return { bytes: new Uint8Array(svg.getContent()), contentType: 'image/svg+xml', ext: 'svg' };
    }
  }
}

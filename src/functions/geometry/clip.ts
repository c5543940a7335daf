/**
 * Clip — keep (or remove) the pixels inside a polygon or envelope; the rest become NoData.
 *
 * Spec: raster-functions.md §2 "Clip"; spec section 8 (ClippingGeometry, ClippingType,
 * MatchVariable, UnionDimension). The clipping region is, in order of precedence:
 * `ClippingGeometry` (a vendor polygon `{rings, spatialReference}`, an envelope
 * `{xmin, ymin, xmax, ymax, spatialReference}`, or GeoJSON Polygon/MultiPolygon), else the extent
 * of `ClippingRaster`, else the `Extent` envelope. With `UseInputGeometry: false` a polygon clips
 * by its envelope only (the vendor's "use input features for clipping geometry" unchecked).
 * A geometry in another spatial reference is projected onto the raster's with proj4 (edges
 * densified into 32 pieces so straight edges follow the projection); without a spatialReference
 * it is taken to be in the raster's.
 * Math: a pixel is inside iff its centre is inside the geometry; even-odd rule over all rings
 * of a polygon (holes honoured), parts of a multipolygon united, ties on the boundary as GDAL's
 * gdal_rasterize (see polygon.ts). ClippingType 1 (clippingOutside, default) keeps the inside,
 * 2 (clippingInside) keeps the outside. Kept pixels keep their values; pixel type, bands, NoData
 * value, statistics and the source-values marker are unchanged (values are not altered).
 * Output grid [ours, spec: "may shrink"]: type 1 shrinks the extent to the clipping region's
 * envelope (or to `Extent` when given) intersected with the raster, snapped outward to whole
 * pixels of the raster's grid (the vendor's clip output takes the geometry's extent); type 2
 * keeps the raster's grid. A region that misses the raster is an error (type 1).
 * MatchVariable / UnionDimension: multidimensional only; accepted, no effect here.
 * outputPixelType: the pixels pass through unchanged, so the engine's cast converts them (values
 * unchanged where the type holds them; otherwise rounded half away from zero and saturated, NaN ->
 * NoData; a real type to complex gives real parts).
 */
import { invalidArgument } from '../../core/errors.js';
import { windowInfo, type Extent, type PixelBlock, type RasterInfo } from '../../core/pixel-block.js';
import type { Rect } from '../../core/rect.js';
import { argPaths } from '../../graph/args.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { envelopeOf, envelopeRing, fillInside, parseGeometry, partsInRasterSR, pixelEdges, type Geometry, type Parts } from './polygon.js';

export const ClippingType = { clippingOutside: 1, clippingInside: 2 } as const;

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
  ClippingGeometry: {
    kind: 'json',
    optional: true,
    doc: 'Polygon {rings, spatialReference}, envelope {xmin, ymin, xmax, ymax, spatialReference}, or GeoJSON Polygon/MultiPolygon.',
  },
  ClippingType: {
    kind: 'enum',
    values: [1, 2],
    names: { clippingOutside: 1, outside: 1, clippingInside: 2, inside: 2 },
    default: ClippingType.clippingOutside,
    aliases: ['ClipType'],
    doc: '1 clippingOutside: keep what is inside the geometry (default); 2 clippingInside: remove what is inside.',
  },
  Extent: {
    kind: 'json',
    optional: true,
    doc: 'Envelope {xmin, ymin, xmax, ymax}: the output extent with ClippingType 1; the clipping region when no geometry or raster is given.',
  },
  ClippingRaster: {
    kind: 'raster',
    optional: true,
    doc: 'A raster whose extent is the clipping region (when no ClippingGeometry is given).',
  },
  UseInputGeometry: {
    kind: 'boolean',
    default: true,
    doc: 'true: clip to the polygon shape; false: clip to its envelope.',
  },
  MatchVariable: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: pair variables by name (no effect here).' },
  UnionDimension: { kind: 'boolean', default: true, doc: 'Multidimensional inputs: union of dimension values (no effect here).' },
} as const satisfies ArgSchema;

interface ClipParams {
  readonly input: number;
  /** Other inputs (ClippingRaster): not read beyond one pixel. */
  readonly keepInside: boolean;
  /** Output pixel (x, y) is input pixel (x + dx, y + dy). */
  readonly dx: number;
  readonly dy: number;
  /** Clipping geometry in the input grid's pixel space (encoded by pixelEdges). */
  readonly edges: Float64Array;
}

const at = argPaths(args);

export const clip = defineFunction<typeof args, ClipParams>({
  name: 'Clip',
  summary: 'Keep (or remove) the pixels whose centre is inside a polygon or envelope; the rest become NoData.',
  variableName: 'Raster',
  family: 'geometry',
  verification: 'reference: gdal_rasterize goldens (polygon with hole, multipolygon, envelope in another SR); hand: ties, types',
  args,

  plan(a, inputs) {
    const src = inputs[a.Raster]!;
    const warnings: string[] = [];
    let geometry: Geometry;
    let path: string;
    if (a.ClippingGeometry !== undefined) {
      path = at('ClippingGeometry');
      geometry = parseGeometry(a.ClippingGeometry, path);
      if (a.ClippingRaster !== undefined) warnings.push('ClippingGeometry given: ClippingRaster is ignored');
    } else if (a.ClippingRaster !== undefined) {
      path = at('ClippingRaster');
      const r = inputs[a.ClippingRaster]!;
      if (r.constant !== undefined) throw invalidArgument(path, 'ClippingRaster must be a raster, not a constant');
      const sr = r.spatialReference;
      geometry = { parts: [[envelopeRing(r.extent)]], envelope: true, ...(sr ? { spatialReference: sr } : {}) };
    } else if (a.Extent !== undefined) {
      path = at('Extent');
      geometry = parseGeometry(a.Extent, path);
    } else {
      throw invalidArgument(at('ClippingGeometry'), 'Clip needs a ClippingGeometry (or a ClippingRaster or an Extent)');
    }

    let parts: Parts = partsInRasterSR(geometry, src, path);
    if (!a.UseInputGeometry && !geometry.envelope) parts = [[envelopeRing(envelopeOf(parts))]];
    const keepInside = a.ClippingType === ClippingType.clippingOutside;

    let window: Rect = { x: 0, y: 0, width: src.width, height: src.height };
    if (keepInside) {
      let region = envelopeOf(parts);
      let regionPath = path;
      if (a.Extent !== undefined && path !== at('Extent')) {
        const ext = parseGeometry(a.Extent, at('Extent'));
        region = envelopeOf(partsInRasterSR(ext, src, at('Extent')));
        regionPath = at('Extent');
      }
      const w = windowOf(region, src);
      if (w === undefined) {
        throw invalidArgument(regionPath, `the clipping region ${show(region)} does not overlap the raster's extent ${show(src.extent)}`);
      }
      window = w;
    }
    const info: RasterInfo = windowInfo(src, window);
    return {
      info,
      halo: 0,
      inputRect: (out, i) =>
        i === a.Raster
          ? { x: out.x + window.x, y: out.y + window.y, width: out.width, height: out.height }
          : { x: 0, y: 0, width: 1, height: 1 },
      params: { input: a.Raster, keepInside, dx: window.x, dy: window.y, edges: pixelEdges(parts, src) },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src: PixelBlock = inputs[p.input]!;
    const { width, height } = out.rect;
    const inside = new Uint8Array(width * height);
    fillInside(p.edges, { x: out.rect.x + p.dx, y: out.rect.y + p.dy, width, height }, inside);
    const m = out.mask;
    const want = p.keepInside ? 1 : 0;
    for (let i = 0; i < m.length; i++) m[i] = src.mask[i]! !== 0 && inside[i] === want ? 1 : 0;
    for (let b = 0; b < out.bands.length; b++) out.bands[b]!.set(src.bands[b]!);
  },
});

/** The pixels of `info`'s grid that `e` touches (snapped outward), clipped to the raster; undefined if none. */
function windowOf(e: Extent, info: RasterInfo): Rect | undefined {
  const eps = 1e-9;
  const x0 = Math.max(0, Math.floor((e.xmin - info.extent.xmin) / info.cellSize.x + eps));
  const x1 = Math.min(info.width, Math.ceil((e.xmax - info.extent.xmin) / info.cellSize.x - eps));
  const y0 = Math.max(0, Math.floor((info.extent.ymax - e.ymax) / info.cellSize.y + eps));
  const y1 = Math.min(info.height, Math.ceil((info.extent.ymax - e.ymin) / info.cellSize.y - eps));
  if (!(x1 > x0 && y1 > y0)) return undefined;
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

const show = (e: Extent): string => `[${e.xmin}, ${e.ymin}, ${e.xmax}, ${e.ymax}]`;

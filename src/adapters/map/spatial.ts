/**
 * Spatial filters of map service queries: the relation of a feature's geometry to the filter
 * geometry, computed with jsts (the JTS port) through the DE-9IM intersection matrix.
 *
 * Which way round (protocols.md §5.6 `SpatialFilter`; the vendor's SOAP `esriSpatialRelEnum`
 * documentation): every relation reads "Query Geometry <relation> Target Geometry", the query
 * geometry being the filter and the target the feature. So:
 * - `within`   (geoSpatialRelWithin)   = the FILTER is within the feature (the feature contains the filter);
 * - `contains` (geoSpatialRelContains) = the FILTER contains the feature (the feature is within the filter);
 * - `relation` (geoSpatialRelRelation) = relate(filter, feature) matches the 9-character mask;
 * - `intersects`, `touches`, `overlaps`, `crosses` are symmetric;
 * - `envelopeIntersects` and `indexIntersects` compare envelopes only (the index entry of a feature
 *   is its envelope).
 * Decision: the model's `SpatialRelation` names follow this reading (filter REL feature), so a SOAP
 * SpatialRel maps to it one to one.
 */
import type JstsGeometry from 'jsts/org/locationtech/jts/geom/Geometry.js';
import GeometryFactory from 'jsts/org/locationtech/jts/geom/GeometryFactory.js';
import GeoJSONReader from 'jsts/org/locationtech/jts/io/GeoJSONReader.js';
import RelateOp from 'jsts/org/locationtech/jts/operation/relate/RelateOp.js';
import { EngineError } from '../../core/errors.js';
import type { Extent, SpatialReference } from '../../core/pixel-block.js';
import { converter, proj4Of, sameSpatialReference } from '../../graph/align.js';
import type { Geometry, SpatialRelation } from './model.js';

interface IntersectionMatrix {
  isIntersects(): boolean;
  isContains(): boolean;
  isWithin(): boolean;
  isTouches(a: number, b: number): boolean;
  isOverlaps(a: number, b: number): boolean;
  isCrosses(a: number, b: number): boolean;
  matches(mask: string): boolean;
}

const reader = new GeoJSONReader(new GeometryFactory());

/** A GeoJSON geometry as a jsts geometry. */
export function toJsts(g: Geometry): JstsGeometry {
  return reader.read(g) as JstsGeometry;
}

/** Topological dimension of a geometry type: 0 points, 1 lines, 2 polygons. */
export function dimensionOf(g: Geometry): number {
  return g.type === 'Point' || g.type === 'MultiPoint' ? 0 : g.type === 'LineString' || g.type === 'MultiLineString' ? 1 : 2;
}

/** Envelope of a GeoJSON geometry (undefined when it has no coordinates). */
export function envelopeOf(g: Geometry): Extent | undefined {
  let xmin = Infinity;
  let ymin = Infinity;
  let xmax = -Infinity;
  let ymax = -Infinity;
  const visit = (c: unknown): void => {
    if (!Array.isArray(c)) return;
    if (typeof c[0] === 'number') {
      const x = c[0];
      const y = c[1] as number;
      if (x < xmin) xmin = x;
      if (x > xmax) xmax = x;
      if (y < ymin) ymin = y;
      if (y > ymax) ymax = y;
      return;
    }
    for (const p of c) visit(p);
  };
  visit(g.coordinates);
  return xmin <= xmax && ymin <= ymax ? { xmin, ymin, xmax, ymax } : undefined;
}

export const envelopesIntersect = (a: Extent, b: Extent): boolean =>
  a.xmin <= b.xmax && b.xmin <= a.xmax && a.ymin <= b.ymax && b.ymin <= a.ymax;

const MASK = /^[TF*012]{9}$/;

/** A filter ready to test many features: its envelope (the index prefilter) and the exact test. */
export interface SpatialTest {
  readonly relation: SpatialRelation;
  /** The filter's envelope: no feature whose envelope misses it can match (except none: every relation needs contact). */
  readonly envelope: Extent | undefined;
  /** True when the feature geometry stands in the relation to the filter. */
  matches(feature: Geometry): boolean;
}

/**
 * Prepares `geometry` as a spatial filter for `relation`. Errors (a bad mask, an unreadable
 * geometry) are INVALID_ARGUMENT at `path` (default `QueryFilter`).
 */
export function spatialTest(geometry: Geometry, relation: SpatialRelation, mask?: string, path = 'QueryFilter'): SpatialTest {
  if (relation === 'relation') {
    const m = (mask ?? '').toUpperCase();
    if (!MASK.test(m)) {
      const msg = `SpatialRelDescription must be a 9-character DE-9IM mask of T, F, *, 0, 1 and 2 (e.g. 'T*F**F***') when SpatialRel is geoSpatialRelRelation.`;
      throw new EngineError('INVALID_ARGUMENT', msg, { path: `${path}/SpatialRelDescription`, details: [msg] });
    }
    mask = m;
  }
  let filter: JstsGeometry;
  try {
    filter = toJsts(geometry);
  } catch (e) {
    const msg = `The filter geometry cannot be read: ${e instanceof Error ? e.message : String(e)}.`;
    throw new EngineError('INVALID_ARGUMENT', msg, { path: `${path}/FilterGeometry`, details: [msg] });
  }
  const envelope = envelopeOf(geometry);
  const filterDim = dimensionOf(geometry);
  const envelopeOnly = relation === 'envelopeIntersects' || relation === 'indexIntersects';
  return {
    relation,
    envelope,
    matches(feature) {
      const fe = envelopeOf(feature);
      if (!envelope || !fe) return false;
      // Every relation but a mask with F in the interior/boundary intersections needs the envelopes to meet.
      const meet = envelopesIntersect(envelope, fe);
      if (envelopeOnly) return meet;
      if (!meet && relation !== 'relation') return false;
      let im: IntersectionMatrix;
      try {
        im = RelateOp.relate(filter, toJsts(feature)) as IntersectionMatrix;
      } catch {
        // Decision: a feature whose geometry JTS cannot relate (self-intersections) matches nothing.
        return false;
      }
      const featureDim = dimensionOf(feature);
      switch (relation) {
        case 'intersects':
          return im.isIntersects();
        case 'touches':
          return im.isTouches(filterDim, featureDim);
        case 'overlaps':
          return im.isOverlaps(filterDim, featureDim);
        case 'crosses':
          return im.isCrosses(filterDim, featureDim);
        case 'within':
          return im.isWithin();
        case 'contains':
          return im.isContains();
        case 'relation':
          return im.matches(mask!);
      }
    },
  };
}

/**
 * True when a mask can match two geometries whose envelopes are disjoint (then the index
 * prefilter must not be used): only masks that require no interior/boundary contact.
 */
export function maskAllowsDisjoint(mask: string): boolean {
  const m = mask.toUpperCase();
  // Cells II, IB, BI, BB (0, 1, 3, 4) must all allow F.
  return [0, 1, 3, 4].every((i) => m[i] === 'F' || m[i] === '*');
}

/** The relation of two geometries for tests and callers without a prepared filter. */
export function relates(feature: Geometry, filter: Geometry, relation: SpatialRelation, mask?: string): boolean {
  return spatialTest(filter, relation, mask).matches(feature);
}

/** A geometry with every coordinate mapped by `f` (Z and M values kept). */
export function mapCoordinates(g: Geometry, f: (x: number, y: number) => readonly [number, number]): Geometry {
  const map = (c: unknown): unknown => {
    const a = c as unknown[];
    if (typeof a[0] === 'number') {
      const [x, y] = f(a[0], a[1] as number);
      return a.length > 2 ? [x, y, ...a.slice(2)] : [x, y];
    }
    return a.map(map);
  };
  return { type: g.type, coordinates: map(g.coordinates) } as Geometry;
}

/**
 * A coordinate transform between two spatial references (undefined when they are the same), or an
 * INVALID_ARGUMENT at `path` when either cannot be resolved to a proj4 definition.
 */
export function transformBetween(
  from: SpatialReference,
  to: SpatialReference,
  path: string,
): ((x: number, y: number) => readonly [number, number]) | undefined {
  if (sameSpatialReference(from, to)) return undefined;
  const a = proj4Of(from);
  const b = proj4Of(to);
  if (a === undefined || b === undefined) {
    const msg = `The spatial reference ${JSON.stringify(a === undefined ? from : to)} is not supported for reprojection.`;
    throw new EngineError('INVALID_ARGUMENT', msg, { path, details: [msg] });
  }
  const c = converter(a, b);
  return (x, y) => {
    const p = c.forward([x, y]);
    return [p[0]!, p[1]!];
  };
}

/** `g` (in `from`) in `to`; the same object when the spatial references are the same. */
export function projectGeometry(g: Geometry, from: SpatialReference, to: SpatialReference, path = 'SpatialReference'): Geometry {
  const f = transformBetween(from, to, path);
  return f ? mapCoordinates(g, f) : g;
}

/**
 * Label features: GeoJSON (RFC 7946: WGS 84 longitude/latitude by definition) or Esri JSON
 * feature sets (`features[].geometry.rings|x,y|points`, `spatialReference.wkid`), reduced to
 * multipolygons with a class value, reprojected into the raster's spatial reference with proj4.
 *
 * Classes [spec §6, contract §5.13]: `classValueField`, else a field named `value` or
 * `classvalue` (any case), else every record is class 1. Class value 0 is reserved for background
 * and is refused with the feature's path. Names: a `classname` / `class_name` / `name` field when
 * present, else the value as text. Points (and multipoints) need `bufferRadius` (in the units of
 * the features' spatial reference), which turns them into 64-gon circles before reprojection;
 * without it a point is a tiny box of 1e-9 units (it still marks its chip, and gives a zero-size
 * label box). Lines are refused (the export labels areas).
 */
import { EngineError } from '../core/errors.js';
import type { SpatialReference } from '../core/pixel-block.js';
import { proj4ForEpsg, proj4Lib } from '../core/crs.js';
import { area, circle, mapPoints, type MultiPolygon, type Polygon, type Ring } from './geometry.js';

export interface LabelFeature {
  readonly classValue: number;
  readonly className: string;
  /** In the raster's map coordinates (or pixel coordinates in PIXEL_SPACE). */
  readonly geometry: MultiPolygon;
  /** Area in the raster's map units squared. */
  readonly area: number;
  /** Index in the input, for messages. */
  readonly index: number;
}

export interface ReadFeaturesOptions {
  readonly classValueField?: string;
  readonly bufferRadius?: number;
  /** Target: the raster's spatial reference; undefined in PIXEL_SPACE (no reprojection). */
  readonly target?: SpatialReference;
  /** JSON path of the parameter, for messages (`inputClassData`). */
  readonly path: string;
}

const bad = (path: string, message: string): EngineError => new EngineError('INVALID_ARGUMENT', message, { path });

function proj4Of(sr: SpatialReference | undefined): string | undefined {
  if (sr === undefined) return undefined;
  if (sr.proj4) return sr.proj4;
  if (sr.wkid !== undefined) return proj4ForEpsg(sr.wkid);
  return undefined;
}

/** A transform from the features' CRS to the target's, or undefined when none is needed. */
function transformBetween(
  from: SpatialReference | undefined,
  to: SpatialReference | undefined,
  path: string,
): ((x: number, y: number) => readonly [number, number]) | undefined {
  if (from === undefined || to === undefined) return undefined;
  if (from.wkid !== undefined && from.wkid === to.wkid) return undefined;
  const a = proj4Of(from);
  const b = proj4Of(to);
  if (a === undefined) throw bad(path, `cannot resolve the labels' spatial reference ${JSON.stringify(from)}`);
  if (b === undefined) throw bad(path, "cannot resolve the raster's spatial reference to reproject the labels into it");
  if (a === b) return undefined;
  const t = proj4Lib()(a, b);
  return (x, y) => {
    const [u, v] = t.forward([x, y]) as [number, number];
    return [u, v];
  };
}

function numberArray(v: unknown, path: string): number[] {
  if (
    !Array.isArray(v) ||
    v.length < 2 ||
    typeof v[0] !== 'number' ||
    typeof v[1] !== 'number' ||
    !Number.isFinite(v[0]) ||
    !Number.isFinite(v[1])
  ) {
    throw bad(path, `expected a coordinate [x, y], got ${JSON.stringify(v)?.slice(0, 60)}`);
  }
  return v as number[];
}

function ringOf(coords: unknown, path: string): Ring {
  if (!Array.isArray(coords) || coords.length < 3) throw bad(path, 'a polygon ring needs at least 3 positions');
  const r: Ring = [];
  coords.forEach((c, i) => {
    const [x, y] = numberArray(c, `${path}[${i}]`);
    r.push(x!, y!);
  });
  const n = r.length;
  if (n >= 4 && r[0] === r[n - 2] && r[1] === r[n - 1]) r.length = n - 2; // drop the closing repeat
  if (r.length < 6) throw bad(path, 'a polygon ring needs at least 3 distinct positions');
  return r;
}

function pointsToPolygons(points: number[][], radius: number | undefined): MultiPolygon {
  return points.map(([x, y]) =>
    radius !== undefined && radius > 0
      ? circle(x!, y!, radius)
      : ([[x!, y!, x! + 1e-9, y!, x! + 1e-9, y! + 1e-9, x!, y! + 1e-9]] as Polygon),
  );
}

/** GeoJSON geometry -> multipolygon (in its own CRS). */
function geoJsonGeometry(g: unknown, path: string, radius: number | undefined): MultiPolygon {
  if (g === null || typeof g !== 'object') throw bad(path, 'a feature needs a geometry');
  const { type, coordinates, geometries } = g as { type?: unknown; coordinates?: unknown; geometries?: unknown };
  const cp = `${path}.coordinates`;
  switch (type) {
    case 'Polygon':
      if (!Array.isArray(coordinates)) throw bad(cp, 'expected an array of rings');
      return [coordinates.map((r, i) => ringOf(r, `${cp}[${i}]`))];
    case 'MultiPolygon':
      if (!Array.isArray(coordinates)) throw bad(cp, 'expected an array of polygons');
      return coordinates.map((p, i) => {
        if (!Array.isArray(p)) throw bad(`${cp}[${i}]`, 'expected an array of rings');
        return p.map((r, k) => ringOf(r, `${cp}[${i}][${k}]`));
      });
    case 'Point':
      return pointsToPolygons([numberArray(coordinates, cp)], radius);
    case 'MultiPoint':
      if (!Array.isArray(coordinates)) throw bad(cp, 'expected an array of positions');
      return pointsToPolygons(
        coordinates.map((c, i) => numberArray(c, `${cp}[${i}]`)),
        radius,
      );
    case 'GeometryCollection':
      if (!Array.isArray(geometries)) throw bad(`${path}.geometries`, 'expected an array of geometries');
      return geometries.flatMap((x, i) => geoJsonGeometry(x, `${path}.geometries[${i}]`, radius));
    case 'LineString':
    case 'MultiLineString':
      throw bad(`${path}.type`, `${type} features cannot label chips (areas or points only)`);
    default:
      throw bad(`${path}.type`, `unknown GeoJSON geometry type ${JSON.stringify(type)}`);
  }
}

/** Esri JSON geometry -> multipolygon. Rings are grouped into polygons by containment of the first vertex. */
function esriGeometry(g: unknown, path: string, radius: number | undefined): MultiPolygon {
  if (g === null || typeof g !== 'object') throw bad(path, 'a feature needs a geometry');
  const o = g as { rings?: unknown; x?: unknown; y?: unknown; points?: unknown; paths?: unknown; xmin?: unknown };
  if (Array.isArray(o.rings)) {
    const rings = o.rings.map((r, i) => ringOf(r, `${path}.rings[${i}]`));
    // Outer rings are clockwise in Esri JSON (positive area with y up means counter-clockwise).
    const signed = (r: Ring): number => {
      let s = 0;
      for (let i = 0; i < r.length; i += 2) {
        const j = (i + 2) % r.length;
        s += r[i]! * r[j + 1]! - r[j]! * r[i + 1]!;
      }
      return s;
    };
    const polys: MultiPolygon = [];
    for (const r of rings) {
      if (signed(r) <= 0 || polys.length === 0) polys.push([r]);
      else polys[polys.length - 1]!.push(r);
    }
    return polys;
  }
  if (typeof o.x === 'number' && typeof o.y === 'number') return pointsToPolygons([[o.x, o.y]], radius);
  if (Array.isArray(o.points))
    return pointsToPolygons(
      o.points.map((c, i) => numberArray(c, `${path}.points[${i}]`)),
      radius,
    );
  if (typeof o.xmin === 'number') {
    const e = o as unknown as { xmin: number; ymin: number; xmax: number; ymax: number };
    return [[[e.xmin, e.ymin, e.xmax, e.ymin, e.xmax, e.ymax, e.xmin, e.ymax]]];
  }
  if (Array.isArray(o.paths)) throw bad(`${path}.paths`, 'polyline features cannot label chips (areas or points only)');
  throw bad(path, 'unrecognised Esri JSON geometry (expected rings, x/y, points or an envelope)');
}

function pick(props: Record<string, unknown>, names: readonly string[]): unknown {
  for (const [k, v] of Object.entries(props)) if (names.includes(k.toLowerCase())) return v;
  return undefined;
}

/**
 * The spatial reference a GeoJSON's `crs` member names (the 2008 GeoJSON form GDAL still writes
 * for projected data: `{"type": "name", "properties": {"name": "EPSG:32616"}}`, or an OGC URN such
 * as `urn:ogc:def:crs:EPSG::32616`); undefined without one (then RFC 7946: WGS 84 longitude,
 * latitude). CRS84 and EPSG:4326 are read in longitude, latitude order, as GDAL reads them.
 */
function geoJsonCrs(doc: { crs?: unknown }, path: string): SpatialReference | undefined {
  if (doc.crs === undefined || doc.crs === null) return undefined;
  const crs = doc.crs as { type?: unknown; properties?: { name?: unknown } };
  const name = crs.type === 'name' && typeof crs.properties?.name === 'string' ? crs.properties.name.trim() : undefined;
  if (name !== undefined && /^(urn:ogc:def:crs:)?OGC:(1\.3:)?CRS84$/i.test(name)) return { wkid: 4326 };
  const epsg = name === undefined ? undefined : /^(?:urn:ogc:def:crs:)?EPSG:(?:[\d.]*:)?(\d+)$/i.exec(name)?.[1];
  if (epsg === undefined) {
    throw bad(
      `${path}.crs`,
      `unsupported crs member ${JSON.stringify(doc.crs).slice(0, 120)}; name an EPSG code, e.g. "crs": {"type":"name","properties":{"name":"EPSG:32616"}}, or leave it out for WGS 84 longitude/latitude`,
    );
  }
  const wkid = Number(epsg);
  if (proj4ForEpsg(wkid) === undefined)
    throw bad(`${path}.crs`, `EPSG:${wkid} (the crs member) is not a spatial reference the engine knows`);
  return { wkid };
}

/**
 * A GeoJSON without `crs` is WGS 84 longitude/latitude (RFC 7946). Coordinates beyond +-180 /
 * +-90 cannot be that: they are almost always projected metres written without their `crs`.
 * Refused, with the member to add (the raster's EPSG code when it has one).
 */
function checkLonLat(g: MultiPolygon, index: number, o: ReadFeaturesOptions): void {
  for (const polygon of g) {
    for (const ring of polygon) {
      for (let k = 0; k < ring.length; k += 2) {
        const x = ring[k]!;
        const y = ring[k + 1]!;
        if (Math.abs(x) <= 180 && Math.abs(y) <= 90) continue;
        const wkid = o.target?.wkid;
        const member = `"crs": {"type":"name","properties":{"name":"EPSG:${wkid ?? 'NNNN'}"}}`;
        throw bad(
          o.path,
          `feature ${index} has the position [${x}, ${y}], which is not a longitude/latitude: the GeoJSON has no crs member, so its ` +
            `coordinates are read as WGS 84 longitude/latitude (RFC 7946). They look like projected coordinates (metres). ` +
            (wkid !== undefined
              ? `If they are in the raster's spatial reference (EPSG:${wkid}), add this member to the FeatureCollection: ${member}`
              : `Add a crs member naming their EPSG code to the FeatureCollection: ${member}, NNNN being the code`),
        );
      }
    }
  }
}

/** Read label features from parsed GeoJSON or Esri JSON. */
export function readFeatures(json: unknown, o: ReadFeaturesOptions): LabelFeature[] {
  if (json === null || typeof json !== 'object')
    throw bad(o.path, 'label data must be a GeoJSON FeatureCollection or an Esri JSON feature set');
  const doc = json as { type?: unknown; features?: unknown; spatialReference?: { wkid?: number; latestWkid?: number; wkt?: string } };
  const isGeoJson = doc.type === 'FeatureCollection' || doc.type === 'Feature';
  const list = doc.type === 'Feature' ? [doc] : doc.features;
  if (!Array.isArray(list)) throw bad(`${o.path}.features`, 'expected an array of features');
  let from: SpatialReference | undefined;
  const declared = isGeoJson ? geoJsonCrs(json, o.path) : undefined;
  if (isGeoJson) from = declared ?? { wkid: 4326 };
  else {
    const sr = doc.spatialReference;
    const wkid = sr?.latestWkid ?? sr?.wkid;
    from = wkid !== undefined ? { wkid: wkid === 102100 ? 3857 : wkid } : undefined;
    if (from === undefined && o.target !== undefined) {
      throw bad(`${o.path}.spatialReference`, 'Esri JSON labels need a spatialReference (wkid) to be placed on the raster');
    }
  }
  const transform = o.target === undefined ? undefined : transformBetween(from, o.target, `${o.path}.spatialReference`);
  const field = o.classValueField?.toLowerCase();
  const out: LabelFeature[] = [];
  list.forEach((f, i) => {
    const fp = `${o.path}.features[${i}]`;
    if (f === null || typeof f !== 'object') throw bad(fp, 'a feature must be an object');
    const feat = f as { geometry?: unknown; properties?: unknown; attributes?: unknown };
    const props = ((isGeoJson ? feat.properties : feat.attributes) ?? {}) as Record<string, unknown>;
    let raw: unknown = 1;
    if (field !== undefined) {
      raw = pick(props, [field]);
      if (raw === undefined)
        throw bad(
          `${fp}.${isGeoJson ? 'properties' : 'attributes'}`,
          `the feature has no field ${JSON.stringify(o.classValueField)} (classValueField)`,
        );
    } else {
      raw = pick(props, ['value', 'classvalue']) ?? 1;
    }
    const classValue = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
    if (typeof classValue !== 'number' || !Number.isInteger(classValue) || classValue < 0 || classValue > 65535) {
      throw bad(fp, `class values must be whole numbers 1..65535, got ${JSON.stringify(raw)}`);
    }
    if (classValue === 0) throw bad(fp, 'class value 0 is reserved for background/NoData; use 1 or more');
    const name = pick(props, ['classname', 'class_name', 'name']);
    if (feat.geometry === null || feat.geometry === undefined) return; // null geometry: no label
    let geometry = isGeoJson
      ? geoJsonGeometry(feat.geometry, `${fp}.geometry`, o.bufferRadius)
      : esriGeometry(feat.geometry, `${fp}.geometry`, o.bufferRadius);
    if (isGeoJson && declared === undefined) checkLonLat(geometry, i, o);
    if (transform !== undefined) geometry = mapPoints(geometry, transform);
    out.push({
      classValue,
      className: typeof name === 'string' && name !== '' ? name : String(classValue),
      geometry,
      area: area(geometry),
      index: i,
    });
  });
  return out;
}

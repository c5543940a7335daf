/**
 * Opening an export's inputs: the raster items (a rendering rule is built through the engine,
 * `context.cellSize` resamples), the additional raster, the labels (vector features in the
 * raster's pixel space, or a class raster), the mask polygons, and the classes with their colours.
 * Every check that refuses an input is made here, before any chip is planned or written.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { EngineError } from '../core/errors.js';
import type { RasterInfo } from '../core/pixel-block.js';
import { rect } from '../core/rect.js';
import { registry } from '../functions/index.js';
import { render, type Recipe } from '../graph/render.js';
import type { RasterNode } from '../graph/types.js';
import type { OpenerScope } from '../io/source.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { mapPoints, type MultiPolygon } from './geometry.js';
import { readFeatures, type LabelFeature } from './features.js';
import type { LabelWriter } from './label-writers.js';
import type { ClassInfo } from './metadata.js';
import type { ChipParams, LabelInput, RasterInput } from './params.js';

export interface OpenedRaster {
  readonly root: RasterNode;
  readonly info: RasterInfo;
  readonly recipe: Recipe;
  readonly name: string;
}

/** Opens a raster for one export; the export closes every raster it opened when it ends. */
export type RasterOpener = OpenerScope['open'];

/** Everything an export reads before it plans chips. */
export interface ExportInputs {
  /** The raster items (several with processAllRasterItems), all of `info`'s band count and type. */
  readonly items: readonly OpenedRaster[];
  /** The first item's info: the grid labels are placed on. */
  readonly info: RasterInfo;
  readonly extra?: OpenedRaster;
  /** Vector labels (inputClassData) in `info`'s pixel space. */
  readonly features: readonly LabelFeature[];
  /** Instance labels (inputInstanceData, Panoptic_Segmentation) in pixel space. */
  readonly instances: readonly LabelFeature[];
  readonly mask?: MultiPolygon;
  /** inputClassData given as a class raster. */
  readonly classRasterSource?: OpenedRaster;
  readonly classes: ClassInfo[];
  readonly instanceClasses?: ClassInfo[];
}

export async function openInputs(
  p: ChipParams,
  writer: LabelWriter,
  open: RasterOpener,
  signal: AbortSignal | undefined,
): Promise<ExportInputs> {
  // Rasters.
  const items: OpenedRaster[] = [];
  for (const [i, input] of p.inputRasters.entries())
    items.push(await openInput(open, input, p.inputRasters.length > 1 ? `inputRaster[${i}]` : 'inputRaster', p.context.cellSize));
  if (items.length > 1 && !p.processAllRasterItems) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      'several input rasters need processAllRasterItems: true (mosaicking rasters is not supported)',
      { path: 'processAllRasterItems' },
    );
  }
  const info = items[0]!.info;
  for (const [i, it] of items.entries()) {
    if (it.info.bandCount !== info.bandCount || it.info.pixelType !== info.pixelType) {
      throw new EngineError(
        'INVALID_ARGUMENT',
        `every raster item must have ${info.bandCount} ${info.pixelType} band(s); item ${i} has ${it.info.bandCount} ${it.info.pixelType}`,
        { path: `inputRaster[${i}]` },
      );
    }
    if (p.tileSize.x > it.info.width && p.tileSize.y > it.info.height && writer.chipPerFeature !== true) {
      throw new EngineError(
        'INVALID_ARGUMENT',
        `the chip (${p.tileSize.x} x ${p.tileSize.y}) is larger than the raster (${it.info.width} x ${it.info.height})`,
        { path: 'tileSize' },
      );
    }
  }
  if ((p.chipFormat === 'PNG' || p.chipFormat === 'JPEG') && (info.bandCount > 3 || info.pixelType !== 'U8')) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `${p.chipFormat} chips hold at most 3 bands of 8-bit data; the input has ${info.bandCount} ${info.pixelType} band(s): use TIFF or MRF, or a rule (ExtractBand, Stretch) making 3 x U8`,
      { path: 'chipFormat' },
    );
  }
  const extra = p.additionalInputRaster
    ? await openInput(open, p.additionalInputRaster, 'additionalInputRaster', p.context.cellSize)
    : undefined;
  if (extra !== undefined && !sameGrid(extra.info, info)) {
    throw new EngineError(
      'UNSUPPORTED_INPUT',
      "additionalInputRaster must lie on the input raster's grid (same extent and cell size); align it first (Resample/Clip rule)",
      { path: 'additionalInputRaster' },
    );
  }

  // Labels.
  const pixelSpace = p.referenceSystem === 'PIXEL_SPACE';
  const target = pixelSpace ? undefined : info.spatialReference;
  let features: LabelFeature[] = [];
  let classRasterSource: OpenedRaster | undefined;
  if (p.inputClassData !== undefined) {
    if (isRasterLocation(p.inputClassData)) {
      classRasterSource = await openInput(
        open,
        { kind: 'location', location: (p.inputClassData as { location: string }).location },
        'inputClassData',
        p.context.cellSize,
        true,
      );
      const ci = classRasterSource.info;
      if (ci.bandCount !== 1 || ci.pixelType.startsWith('F') || ci.pixelType.startsWith('C')) {
        throw new EngineError('INVALID_ARGUMENT', `a class raster must have one integer band; it has ${ci.bandCount} ${ci.pixelType}`, {
          path: 'inputClassData',
        });
      }
      if (!sameGrid(ci, info)) {
        throw new EngineError('UNSUPPORTED_INPUT', "the class raster must lie on the input raster's grid (same extent and cell size)", {
          path: 'inputClassData',
        });
      }
    } else {
      const json = await readJsonLocation(p.inputClassData, 'inputClassData');
      features = toPixelSpace(
        readFeatures(json, { classValueField: p.classValueField, bufferRadius: p.bufferRadius, target, path: 'inputClassData' }),
        info,
        pixelSpace,
      );
    }
  }
  let instances: LabelFeature[] = [];
  if (p.inputInstanceData !== undefined) {
    const json = await readJsonLocation(p.inputInstanceData, 'inputInstanceData');
    instances = toPixelSpace(
      readFeatures(json, {
        classValueField: p.instanceClassValueField ?? p.classValueField,
        bufferRadius: p.bufferRadius,
        target,
        path: 'inputInstanceData',
      }),
      info,
      pixelSpace,
    );
  }
  let mask: MultiPolygon | undefined;
  if (p.inputMaskPolygons !== undefined) {
    const json = await readJsonLocation(p.inputMaskPolygons, 'inputMaskPolygons');
    mask = toPixelSpace(readFeatures(json, { target, path: 'inputMaskPolygons' }), info, pixelSpace).flatMap((f) => f.geometry);
  }

  // Classes.
  let classes: ClassInfo[];
  if (classRasterSource !== undefined) {
    const values = await classValuesOf(classRasterSource, signal);
    const cm = classRasterSource.info.colormap;
    classes = values.map((v, i) => {
      const k = cm ? indexIn(cm.values, v) : -1;
      return { value: v, name: String(v), color: k >= 0 && cm ? [cm.rgb[3 * k]!, cm.rgb[3 * k + 1]!, cm.rgb[3 * k + 2]!] : classColor(i) };
    });
  } else {
    classes = classesOf([...features, ...instances].map((f) => [f.classValue, f.className] as [number, string]));
  }
  const instanceClasses =
    writer.instances === true ? classesOf(instances.map((f) => [f.classValue, f.className] as [number, string])) : undefined;
  if (writer.instances === true && instances.length === 0) {
    throw new EngineError('INVALID_ARGUMENT', `${p.metadataFormat} needs inputInstanceData with at least one feature`, {
      path: 'inputInstanceData',
    });
  }
  return {
    items,
    info,
    ...(extra ? { extra } : {}),
    features,
    instances,
    ...(mask ? { mask } : {}),
    ...(classRasterSource ? { classRasterSource } : {}),
    classes,
    ...(instanceClasses ? { instanceClasses } : {}),
  };
}

/** Whether `a` lies on `b`'s grid (same size and origin, to a millionth of a cell). */
const sameGrid = (a: RasterInfo, b: RasterInfo): boolean =>
  a.width === b.width &&
  a.height === b.height &&
  Math.abs(a.extent.xmin - b.extent.xmin) <= 1e-6 * b.cellSize.x &&
  Math.abs(a.extent.ymax - b.extent.ymax) <= 1e-6 * b.cellSize.y;

async function openInput(
  open: RasterOpener,
  input: RasterInput,
  name: string,
  cellSize?: { readonly x: number; readonly y: number },
  nearest = false,
): Promise<OpenedRaster> {
  let opened: OpenedRaster;
  if (input.kind === 'location' && input.rule === undefined) {
    const src = await open(input.location).catch((e: unknown) => {
      throw e instanceof EngineError ? new EngineError(e.code, e.message, { path: name, cause: e }) : e;
    });
    opened = { root: src, info: src.info, recipe: { rule: { rasterFunction: 'Identity' }, sources: { $$: input.location } }, name };
  } else opened = await openRule(open, input.rule, input.kind === 'location' ? { $$: input.location } : {}, name);
  // context.cellSize: resample through the engine's Resample (bilinear for imagery, nearest for class rasters).
  if (cellSize === undefined) return opened;
  const cs = opened.info.cellSize;
  if (Math.abs(cs.x - cellSize.x) <= 1e-9 * cellSize.x && Math.abs(cs.y - cellSize.y) <= 1e-9 * cellSize.y) return opened;
  const inner = input.kind === 'location' && input.rule === undefined ? '$$' : input.rule;
  const rule = {
    rasterFunction: 'Resample',
    rasterFunctionArguments: { Raster: inner, ResamplingType: nearest ? 0 : 1, OutputCellsize: { x: cellSize.x, y: cellSize.y } },
  };
  return openRule(open, rule, input.kind === 'location' ? { $$: input.location } : {}, name);
}

/**
 * A rule given as a raster input. It names its rasters by `{ "url": ... }` or as plain paths
 * (`"Raster": "scene.tif"`): the export binds no variables, so a bare name is a path, recorded in
 * the recipe's sources for the workers. `$$` is the raster of `{ "url", "renderingRule" }`.
 */
async function openRule(open: RasterOpener, rule: unknown, bound: Record<string, string>, name: string): Promise<OpenedRaster> {
  const sources = { ...bound };
  const unbound = (ref: string): string | undefined => (ref.startsWith('$') ? undefined : (sources[ref] = ref));
  const hint = (): string =>
    `a rule given as ${name} names its rasters as plain paths or {"url": PATH} (e.g. "Raster": "scene.tif"), or applies to one raster as {"url": PATH, "renderingRule": RULE}`;
  const prefix = (path: string | undefined): string => `${name}${path ? `.${path}` : ''}`;
  const { root } = await buildGraph(rule, { registry, resolveSource: bindSources(sources, open, { unbound, hint }) }).catch(
    (e: unknown) => {
      if (e instanceof EngineError) {
        throw new EngineError(e.code, e.message, {
          path: prefix(e.path),
          issues: e.issues.map((i) => ({ ...i, path: prefix(i.path) })),
          cause: e,
        });
      }
      throw e;
    },
  );
  return { root, info: root.info, recipe: { rule, sources }, name };
}

async function readJsonLocation(input: LabelInput, path: string): Promise<unknown> {
  if (input.kind === 'inline') return input.json;
  const file = input.location.replace(/^file:\/\//, '');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new EngineError('IO_ERROR', `cannot read ${input.location}: ${(e as Error).message}`, { path });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new EngineError('INVALID_ARGUMENT', `${input.location} is not GeoJSON or Esri JSON: ${(e as Error).message}`, { path });
  }
}

const isRasterLocation = (input: LabelInput | undefined): boolean =>
  input?.kind === 'location' && ['.tif', '.tiff', '.mrf', '.img'].includes(extname(input.location.replace(/[?#].*$/, '')).toLowerCase());

/** Features into the raster's pixel space (x = column, y = row, continuous). */
function toPixelSpace(features: LabelFeature[], info: RasterInfo, pixelSpace: boolean): LabelFeature[] {
  if (pixelSpace) return features;
  const { extent, cellSize } = info;
  return features.map((f) => ({
    ...f,
    geometry: mapPoints(f.geometry, (x, y) => [(x - extent.xmin) / cellSize.x, (extent.ymax - y) / cellSize.y]),
  }));
}

/** A deterministic, well-spread colour per class (golden-angle hues). */
function classColor(i: number): [number, number, number] {
  const h = (i * 137.508) % 360;
  const f = (n: number): number => {
    const k = (n + h / 60) % 6;
    return Math.round(255 * (0.85 - 0.6 * Math.max(0, Math.min(k, 4 - k, 1))));
  };
  return [f(5), f(3), f(1)];
}

/** Classes from (value, name) pairs: the first name of each value, sorted by value, coloured in that order. */
export function classesOf(values: Iterable<[number, string]>): ClassInfo[] {
  const byValue = new Map<number, string>();
  for (const [v, n] of values) if (!byValue.has(v)) byValue.set(v, n);
  return [...byValue.entries()].sort((a, b) => a[0] - b[0]).map(([value, name], i) => ({ value, name, color: classColor(i) }));
}

async function classValuesOf(r: OpenedRaster, signal: AbortSignal | undefined): Promise<number[]> {
  const seen = new Set<number>();
  const rows = Math.max(1, Math.floor(1 << (20 / Math.max(1, r.info.width))));
  for (let y = 0; y < r.info.height; y += rows) {
    const b = await render(r.root, {
      rect: rect(0, y, r.info.width, Math.min(rows, r.info.height - y)),
      tileSize: Math.max(r.info.width, rows),
      signal,
    });
    const band = b.bands[0]!;
    for (let i = 0; i < band.length; i++) if (b.mask[i] && band[i] !== 0) seen.add(band[i]!);
  }
  return [...seen].sort((a, b) => a - b);
}

function indexIn(values: Float64Array, v: number): number {
  for (let i = 0; i < values.length; i++) if (values[i] === v) return i;
  return -1;
}

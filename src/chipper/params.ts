/**
 * Parameters of the training-data export (seed section 6) and rasterflow's extensions, checked
 * before anything is opened or written. Every problem names its parameter as a JSON path.
 *
 * Inputs (`inputRaster`, `inputClassData`, `inputMaskPolygons`, `additionalInputRaster`,
 * `inputInstanceData`) accept a local path, an object with `url` (a path, `file:` or http(s)
 * URL), an inline GeoJSON / Esri JSON object for vector data, and, for rasters, a rendering rule
 * (`{ rasterFunction, ... }`, raster arguments as `{ url }`, or `{ url, renderingRule }` to apply a
 * rule to one raster). `inputRaster` may be an array of such rasters (`processAllRasterItems`).
 *
 * Extensions (ours): `indexDigits` (9 | 12), `edgeMode` (`pad` | `shift` | `skip`), `mapTxtStyle`
 * (`vendor` | `single-space`), `labelSets` (`COCO`, `YOLO`: extra label sets written from the
 * same run), `maxNoDataFraction` (skip chips with more NoData), `maxEmptyChipRatio` (cap on the
 * share of label-less chips), `validationFraction` + `splitBlockSize` (spatially separated
 * train/validation split by blocks of chips, recorded in `manifest.json`), `vocExtras`,
 * `rotationMode` (`single` | `multiples`), `resume` (continue an interrupted export).
 */
import { EngineError, type Issue, combinedError } from '../core/errors.js';

export const METADATA_FORMATS = [
  'KITTI_rectangles',
  'PASCAL_VOC_rectangles',
  'Classified_Tiles',
  'RCNN_Masks',
  'Labeled_Tiles',
  'MultiLabeled_Tiles',
  'Export_Tiles',
  'CycleGAN',
  'Imagenet',
  'Panoptic_Segmentation',
] as const;
export type MetadataFormat = (typeof METADATA_FORMATS)[number];

export const CHIP_FORMATS = ['TIFF', 'PNG', 'JPEG', 'MRF'] as const;
export type ChipFormat = (typeof CHIP_FORMATS)[number];

/** A raster input: a location, or a rule over locations. */
export type RasterInput =
  { readonly kind: 'location'; readonly location: string; readonly rule?: unknown } | { readonly kind: 'rule'; readonly rule: unknown };
/** Vector or raster label data: a location (GeoJSON/Esri JSON file or a class raster) or inline JSON. */
export type LabelInput = { readonly kind: 'location'; readonly location: string } | { readonly kind: 'inline'; readonly json: unknown };

export interface ChipParams {
  readonly inputRasters: readonly RasterInput[];
  readonly outputLocation: string;
  readonly inputClassData?: LabelInput;
  readonly chipFormat: ChipFormat;
  readonly tileSize: { readonly x: number; readonly y: number };
  readonly strideSize: { readonly x: number; readonly y: number };
  readonly metadataFormat: MetadataFormat;
  readonly classValueField?: string;
  readonly bufferRadius?: number;
  readonly inputMaskPolygons?: LabelInput;
  readonly rotationAngle: number;
  readonly referenceSystem: 'MAP_SPACE' | 'PIXEL_SPACE';
  readonly processAllRasterItems: boolean;
  readonly blackenAroundFeature: boolean;
  readonly fixChipSize: boolean;
  readonly additionalInputRaster?: RasterInput;
  readonly inputInstanceData?: LabelInput;
  readonly instanceClassValueField?: string;
  readonly minPolygonOverlapRatio: number;
  readonly context: {
    readonly cellSize?: { readonly x: number; readonly y: number };
    readonly extent?: { readonly xmin: number; readonly ymin: number; readonly xmax: number; readonly ymax: number };
    readonly parallelProcessingFactor: number;
    readonly exportAllTiles: boolean;
    readonly startIndex: number;
  };
  // Extensions.
  readonly indexDigits: 9 | 12;
  readonly edgeMode: 'pad' | 'shift' | 'skip';
  readonly mapTxtStyle: 'vendor' | 'single-space';
  readonly labelSets: readonly ('COCO' | 'YOLO')[];
  readonly maxNoDataFraction: number;
  readonly maxEmptyChipRatio: number;
  readonly validationFraction: number;
  readonly splitBlockSize: number;
  readonly vocExtras: boolean;
  readonly rotationMode: 'single' | 'multiples';
  readonly resume: boolean;
}

const KNOWN = new Set(
  [
    'inputRaster',
    'outputLocation',
    'inputClassData',
    'chipFormat',
    'tileSize',
    'strideSize',
    'metadataFormat',
    'classValueField',
    'bufferRadius',
    'inputMaskPolygons',
    'rotationAngle',
    'referenceSystem',
    'processAllRasterItems',
    'blackenAroundFeature',
    'fixChipSize',
    'additionalInputRaster',
    'inputInstanceData',
    'instanceClassValueField',
    'minPolygonOverlapRatio',
    'context',
    'f',
    'indexDigits',
    'edgeMode',
    'mapTxtStyle',
    'labelSets',
    'maxNoDataFraction',
    'maxEmptyChipRatio',
    'validationFraction',
    'splitBlockSize',
    'vocExtras',
    'rotationMode',
    'resume',
  ].map((k) => k.toLowerCase()),
);

/** Parse parameters given as an object or a JSON string; throws one EngineError listing every problem. */
export function parseChipParams(raw: unknown): ChipParams {
  const issues: Issue[] = [];
  const problem = (path: string, message: string): undefined => {
    issues.push({ code: 'INVALID_ARGUMENT', path, message });
    return undefined;
  };
  let obj = raw;
  if (typeof obj === 'string') {
    try {
      obj = JSON.parse(obj);
    } catch (e) {
      throw new EngineError('INVALID_ARGUMENT', `the parameters are not valid JSON: ${(e as Error).message}`, { path: '' });
    }
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj))
    throw new EngineError('INVALID_ARGUMENT', 'the parameters must be a JSON object', { path: '' });
  // Parameter names match case-insensitively (REST clients vary); canonical names below.
  const p = new Map<string, unknown>();
  for (const [k, v] of Object.entries(obj)) {
    if (!KNOWN.has(k.toLowerCase())) problem(k, `unknown parameter ${JSON.stringify(k)}`);
    p.set(k.toLowerCase(), typeof v === 'string' && /^\s*[[{]/.test(v) ? tryJson(v) : v);
  }
  const get = (k: string): unknown => p.get(k.toLowerCase());

  const str = (k: string, values?: readonly string[]): string | undefined => {
    const v = get(k);
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') return problem(k, `expected a string, got ${JSON.stringify(v)}`);
    if (values) {
      const hit = values.find((x) => x.toLowerCase() === v.toLowerCase());
      return hit ?? problem(k, `must be one of ${values.join(', ')}; got ${JSON.stringify(v)}`);
    }
    return v;
  };
  const num = (k: string, path = k, v = get(k)): number | undefined => {
    if (v === undefined || v === null || v === '') return undefined;
    const n = typeof v === 'string' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isFinite(n)) return problem(path, `expected a number, got ${JSON.stringify(v)}`);
    return n;
  };
  const bool = (k: string, dflt: boolean, path = k, v = get(k)): boolean => {
    if (v === undefined || v === null || v === '') return dflt;
    if (typeof v === 'boolean') return v;
    if (v === 'true' || v === 'false') return v === 'true';
    problem(path, `expected true or false, got ${JSON.stringify(v)}`);
    return dflt;
  };
  const xy = (k: string): { x: number; y: number } | undefined => {
    const v = get(k);
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'number') return { x: v, y: v };
    if (typeof v !== 'object') return problem(k, 'expected {"x": int, "y": int}');
    const o = v as Record<string, unknown>;
    const x = num('x', `${k}.x`, o.x);
    const y = num('y', `${k}.y`, o.y);
    if (x === undefined || y === undefined) return problem(k, 'expected {"x": int, "y": int}');
    if (!Number.isInteger(x) || x < 1 || x > 16384) return problem(`${k}.x`, `must be a whole number 1..16384, got ${x}`);
    if (!Number.isInteger(y) || y < 1 || y > 16384) return problem(`${k}.y`, `must be a whole number 1..16384, got ${y}`);
    return { x, y };
  };
  const rasterInput = (v: unknown, path: string): RasterInput | undefined => {
    if (typeof v === 'string' && v.trim() !== '') return { kind: 'location', location: v };
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const o = v as Record<string, unknown>;
      if (typeof o.rasterFunction === 'string' || typeof o.function === 'object') return { kind: 'rule', rule: o };
      if (typeof o.url === 'string' && o.url !== '')
        return { kind: 'location', location: o.url, ...(o.renderingRule !== undefined ? { rule: o.renderingRule } : {}) };
      if (o.itemId !== undefined) return problem(path, 'portal items (itemId) are not reachable here; give a path or {"url": ...}');
    }
    return problem(path, 'expected a raster path, {"url": path-or-URL}, or a rendering rule');
  };
  const labelInput = (k: string): LabelInput | undefined => {
    const v = get(k);
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v === 'string') return { kind: 'location', location: v };
    if (typeof v === 'object' && !Array.isArray(v)) {
      const o = v as Record<string, unknown>;
      if (typeof o.url === 'string') return { kind: 'location', location: o.url };
      if (o.type === 'FeatureCollection' || o.type === 'Feature' || Array.isArray(o.features)) return { kind: 'inline', json: o };
    }
    return problem(k, 'expected a path, {"url": ...}, or an inline GeoJSON / Esri JSON feature collection');
  };

  // Required.
  const rawRaster = get('inputRaster');
  let inputRasters: RasterInput[] = [];
  if (rawRaster === undefined || rawRaster === null || rawRaster === '') problem('inputRaster', 'inputRaster is required');
  else if (Array.isArray(rawRaster)) {
    if (rawRaster.length === 0) problem('inputRaster', 'inputRaster is an empty list');
    inputRasters = rawRaster.map((r, i) => rasterInput(r, `inputRaster[${i}]`)).filter((r): r is RasterInput => r !== undefined);
  } else {
    const r = rasterInput(rawRaster, 'inputRaster');
    if (r) inputRasters = [r];
  }
  const outputLocation = str('outputLocation') ?? problem('outputLocation', 'outputLocation is required (a folder)');

  const metadataFormat = (str('metadataFormat', METADATA_FORMATS) ?? 'PASCAL_VOC_rectangles') as MetadataFormat;
  const inputClassData = labelInput('inputClassData');
  const unlabeled = metadataFormat === 'Export_Tiles' || metadataFormat === 'CycleGAN';
  if (!unlabeled && inputClassData === undefined && get('inputClassData') === undefined) {
    problem('inputClassData', `inputClassData is required for ${metadataFormat}`);
  }
  const chipFormat = (str('chipFormat', CHIP_FORMATS) ?? 'TIFF') as ChipFormat;
  const tileSize = xy('tileSize') ?? { x: 256, y: 256 };
  const strideSize = xy('strideSize') ?? tileSize;

  const bufferRadius = num('bufferRadius');
  if (bufferRadius !== undefined && bufferRadius < 0) problem('bufferRadius', `must be >= 0, got ${bufferRadius}`);
  const rotationAngle = num('rotationAngle') ?? 0;
  const minPolygonOverlapRatio = num('minPolygonOverlapRatio') ?? 0;
  if (minPolygonOverlapRatio < 0 || minPolygonOverlapRatio > 1)
    problem('minPolygonOverlapRatio', `must be 0..1, got ${minPolygonOverlapRatio}`);
  const referenceSystem = (str('referenceSystem', ['MAP_SPACE', 'PIXEL_SPACE']) ?? 'MAP_SPACE') as 'MAP_SPACE' | 'PIXEL_SPACE';

  const additionalInputRaster =
    get('additionalInputRaster') !== undefined && get('additionalInputRaster') !== ''
      ? rasterInput(get('additionalInputRaster'), 'additionalInputRaster')
      : undefined;
  if (additionalInputRaster && !['Classified_Tiles', 'Export_Tiles', 'CycleGAN'].includes(metadataFormat)) {
    problem(
      'additionalInputRaster',
      `additionalInputRaster is valid only with Classified_Tiles, Export_Tiles or CycleGAN, not ${metadataFormat}`,
    );
  }
  if (metadataFormat === 'CycleGAN' && additionalInputRaster === undefined)
    problem('additionalInputRaster', 'CycleGAN needs additionalInputRaster (domain B)');
  const inputInstanceData = labelInput('inputInstanceData');
  if (inputInstanceData && metadataFormat !== 'Panoptic_Segmentation')
    problem('inputInstanceData', 'inputInstanceData is valid only with Panoptic_Segmentation');
  // The REST table conflates instanceClassValueField with the overlap ratio; a number here is the ratio (contract §13.3).
  const icf = get('instanceClassValueField');
  let instanceClassValueField: string | undefined;
  let overlap = minPolygonOverlapRatio;
  if (typeof icf === 'number') overlap = get('minPolygonOverlapRatio') === undefined ? icf : overlap;
  else instanceClassValueField = str('instanceClassValueField');

  const ctxRaw = get('context');
  let context: ChipParams['context'] = { parallelProcessingFactor: 1, exportAllTiles: false, startIndex: 0 };
  if (ctxRaw !== undefined && ctxRaw !== null) {
    if (typeof ctxRaw !== 'object' || Array.isArray(ctxRaw)) problem('context', 'context must be an object');
    else {
      const c = new Map(Object.entries(ctxRaw as Record<string, unknown>).map(([k, v]) => [k.toLowerCase(), v] as const));
      for (const k of c.keys()) {
        if (!['cellsize', 'extent', 'parallelprocessingfactor', 'exportalltiles', 'startindex', 'outsr', 'processsr'].includes(k))
          problem(`context.${k}`, `unknown context setting ${JSON.stringify(k)}`);
      }
      let cellSize: { x: number; y: number } | undefined;
      const cs = c.get('cellsize');
      if (cs !== undefined && cs !== null) {
        const x = num('', 'context.cellSize', typeof cs === 'object' ? (cs as { x?: unknown }).x : cs);
        const y = num('', 'context.cellSize', typeof cs === 'object' ? ((cs as { y?: unknown }).y ?? (cs as { x?: unknown }).x) : cs);
        if (x === undefined || y === undefined || !(x > 0 && y > 0))
          problem('context.cellSize', 'cellSize must be a positive number or {"x", "y"}');
        else cellSize = { x, y };
      }
      let extent: { xmin: number; ymin: number; xmax: number; ymax: number } | undefined;
      const ex = c.get('extent');
      if (ex !== undefined && ex !== null) {
        const e = ex as Record<string, unknown>;
        const vals = ['xmin', 'ymin', 'xmax', 'ymax'].map((k) => num('', `context.extent.${k}`, e[k]));
        if (vals.some((v) => v === undefined) || !(vals[2]! > vals[0]! && vals[3]! > vals[1]!))
          problem('context.extent', 'extent must be {xmin, ymin, xmax, ymax} with xmax > xmin and ymax > ymin');
        else extent = { xmin: vals[0]!, ymin: vals[1]!, xmax: vals[2]!, ymax: vals[3]! };
      }
      const ppf = c.get('parallelprocessingfactor');
      let parallel = 1;
      if (ppf !== undefined && ppf !== null && ppf !== '') {
        const s = typeof ppf === 'string' ? ppf.trim() : typeof ppf === 'number' ? String(ppf) : JSON.stringify(ppf);
        const n = s.endsWith('%') ? (Number(s.slice(0, -1)) / 100) * 2 : Number(s);
        if (!Number.isFinite(n) || n < 0)
          problem('context.parallelProcessingFactor', `expected a number or a percentage, got ${JSON.stringify(ppf)}`);
        else parallel = Math.max(0, Math.round(n));
      }
      const startIndex = num('', 'context.startIndex', c.get('startindex')) ?? 0;
      if (!Number.isInteger(startIndex) || startIndex < 0) problem('context.startIndex', `must be a whole number >= 0, got ${startIndex}`);
      context = {
        ...(cellSize ? { cellSize } : {}),
        ...(extent ? { extent } : {}),
        parallelProcessingFactor: parallel,
        exportAllTiles: bool('', false, 'context.exportAllTiles', c.get('exportalltiles')),
        startIndex,
      };
    }
  }

  const indexDigits = num('indexDigits') ?? 9;
  if (indexDigits !== 9 && indexDigits !== 12) problem('indexDigits', 'indexDigits must be 9 or 12');
  const labelSetsRaw = get('labelSets');
  const labelSets: ('COCO' | 'YOLO')[] = [];
  if (labelSetsRaw !== undefined) {
    const list: unknown[] = Array.isArray(labelSetsRaw)
      ? labelSetsRaw
      : typeof labelSetsRaw === 'string'
        ? labelSetsRaw.split(/[\s,]+/).filter(Boolean)
        : [labelSetsRaw];
    list.forEach((v, i) => {
      const s = String(v).toUpperCase();
      if (s === 'COCO' || s === 'YOLO') labelSets.push(s);
      else problem(`labelSets[${i}]`, `unknown label set ${JSON.stringify(v)} (COCO or YOLO)`);
    });
    if (
      labelSets.length > 0 &&
      !['PASCAL_VOC_rectangles', 'KITTI_rectangles', 'RCNN_Masks', 'Classified_Tiles', 'Panoptic_Segmentation'].includes(metadataFormat)
    ) {
      problem('labelSets', `COCO/YOLO label sets need a per-object format, not ${metadataFormat}`);
    }
  }
  const fraction = (k: string, dflt: number): number => {
    const v = num(k) ?? dflt;
    if (v < 0 || v > 1) problem(k, `must be 0..1, got ${v}`);
    return v;
  };
  const splitBlockSize = num('splitBlockSize') ?? 4;
  if (!Number.isInteger(splitBlockSize) || splitBlockSize < 1)
    problem('splitBlockSize', 'splitBlockSize must be a whole number of chips >= 1');

  if (issues.length > 0) throw combinedError(issues);
  return {
    inputRasters,
    outputLocation: outputLocation!,
    ...(inputClassData ? { inputClassData } : {}),
    chipFormat,
    tileSize,
    strideSize,
    metadataFormat,
    ...(str('classValueField') !== undefined ? { classValueField: str('classValueField')! } : {}),
    ...(bufferRadius !== undefined ? { bufferRadius } : {}),
    ...(labelInput('inputMaskPolygons') ? { inputMaskPolygons: labelInput('inputMaskPolygons')! } : {}),
    rotationAngle,
    referenceSystem,
    processAllRasterItems: bool('processAllRasterItems', false),
    blackenAroundFeature: bool('blackenAroundFeature', false),
    fixChipSize: bool('fixChipSize', true),
    ...(additionalInputRaster ? { additionalInputRaster } : {}),
    ...(inputInstanceData ? { inputInstanceData } : {}),
    ...(instanceClassValueField ? { instanceClassValueField } : {}),
    minPolygonOverlapRatio: overlap,
    context,
    indexDigits: indexDigits as 9 | 12,
    edgeMode: (str('edgeMode', ['pad', 'shift', 'skip']) ?? 'pad') as 'pad' | 'shift' | 'skip',
    mapTxtStyle: (str('mapTxtStyle', ['vendor', 'single-space']) ?? 'vendor') as 'vendor' | 'single-space',
    labelSets,
    maxNoDataFraction: fraction('maxNoDataFraction', 1),
    maxEmptyChipRatio: fraction('maxEmptyChipRatio', 1),
    validationFraction: fraction('validationFraction', 0),
    splitBlockSize,
    vocExtras: bool('vocExtras', false),
    rotationMode: (str('rotationMode', ['single', 'multiples']) ?? 'single') as 'single' | 'multiples',
    resume: bool('resume', false),
  };
}

function tryJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

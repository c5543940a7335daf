/**
 * The export's statistics and its three metadata files: `geo_model_definition.emd` (EMD),
 * `geo_accumulated_stats.json` (EAS) and `stats.txt` (contract §7-§9).
 *
 * Band statistics are streaming moments merged with Chan et al.'s parallel formula (M1 = mean,
 * M2 = sum of squared deviations, Num = valid pixels; NoData excluded), one record per chip merged
 * in chip order, so a resumed export and an uninterrupted one give the same bits.
 */
import { maskAllValid, type RasterInfo } from '../core/pixel-block.js';
import { byteHistogram } from '../io/pixel-statistics.js';
import { BoundByteBands, squaresInWasm } from '../wasm/stats.js';

export interface BandMoments {
  min: number;
  max: number;
  m1: number;
  m2: number;
  num: number;
}

export const emptyMoments = (): BandMoments => ({ min: Infinity, max: -Infinity, m1: 0, m2: 0, num: 0 });

/** Merge `b` into `a` (Chan et al. 1979). */
export function mergeMoments(a: BandMoments, b: BandMoments): void {
  if (b.num === 0) return;
  if (a.num === 0) {
    Object.assign(a, b);
    return;
  }
  const n = a.num + b.num;
  const d = b.m1 - a.m1;
  a.m2 = a.m2 + b.m2 + (d * d * a.num * b.num) / n;
  a.m1 = a.m1 + (d * b.num) / n;
  a.num = n;
  if (b.min < a.min) a.min = b.min;
  if (b.max > a.max) a.max = b.max;
}

/** Moments of one band's valid pixels (two passes: mean, then squared deviations). */
export function momentsOf(band: ArrayLike<number>, mask: Uint8Array): BandMoments {
  if (byteBand(band, mask)) return byteMoments(band, mask);
  let n = 0;
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] === 0) continue;
    const v = band[i]!;
    if (v !== v) continue;
    n++;
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (n === 0) return emptyMoments();
  const mean = sum / n;
  let m2 = 0;
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] === 0) continue;
    const v = band[i]!;
    if (v !== v) continue;
    m2 += (v - mean) * (v - mean);
  }
  return { min, max, m1: mean, m2, num: n };
}

/** Scratch of byteMoments: four interleaved histograms, then the squared deviation of each value (per band of a group). */
const scratchHistogram = new Uint32Array(1024);
const squaredDeviation = new Float64Array(4 * 256);

/**
 * The first pass of byteMoments from a histogram: n, min, max and the mean (n, the sum, min and
 * max are integers, exact in any order), and into `t` at `at` the squared deviation of each of
 * the 256 values, computed by the pixel loop's expression. Undefined without a valid pixel.
 */
function histogramMoments(h: Uint32Array, t: Float64Array, at: number): BandMoments | undefined {
  let n = 0;
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let v = 0; v < 256; v++) {
    const c = h[v]! + h[256 + v]! + h[512 + v]! + h[768 + v]!;
    if (c === 0) continue;
    n += c;
    sum += v * c;
    if (v < min) min = v;
    max = v;
  }
  if (n === 0) return undefined;
  const mean = sum / n;
  for (let v = 0; v < 256; v++) t[at + v] = (v - mean) * (v - mean);
  return { min, max, m1: mean, m2: 0, num: n };
}

/**
 * `momentsOf` for U8 bands, the same bits: the first pass counts values into a histogram; the
 * second adds each valid pixel's squared deviation in pixel order as the loop does, read from a
 * table of the 256 values computed by the same expression, so every rounding is the same.
 */
function byteMoments(band: Uint8Array, mask: Uint8Array): BandMoments {
  const len = mask.length;
  const all = maskAllValid(mask, 0, len);
  const t = squaredDeviation;
  const m = histogramMoments(byteHistogram(band, mask, all, scratchHistogram), t, 0);
  if (m === undefined) return emptyMoments();
  m.m2 = singleSquares(band, mask, all, t);
  return m;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Whether the first `len` bytes of `b` can be read as 32-bit words in pixel order (little-endian host, aligned). */
const aligned = (b: Uint8Array, len: number): boolean => LITTLE_ENDIAN && b.byteOffset % 4 === 0 && b.length >= len;

/**
 * chainedSquares of three unmasked byte bands, reading four pixels of each band as one 32-bit
 * word (its low byte first: pixel order): fewer loads, each sum still taking its pixels one by one
 * in pixel order.
 */
function wordSquares3(b0: Uint8Array, b1: Uint8Array, b2: Uint8Array, len: number, t: Float64Array): number[] {
  const words = len >> 2;
  const w0 = new Uint32Array(b0.buffer, b0.byteOffset, words);
  const w1 = new Uint32Array(b1.buffer, b1.byteOffset, words);
  const w2 = new Uint32Array(b2.buffer, b2.byteOffset, words);
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  for (let k = 0; k < words; k++) {
    const x = w0[k]!;
    const y = w1[k]!;
    const z = w2[k]!;
    s0 += t[x & 255]!;
    s1 += t[256 + (y & 255)]!;
    s2 += t[512 + (z & 255)]!;
    s0 += t[(x >>> 8) & 255]!;
    s1 += t[256 + ((y >>> 8) & 255)]!;
    s2 += t[512 + ((z >>> 8) & 255)]!;
    s0 += t[(x >>> 16) & 255]!;
    s1 += t[256 + ((y >>> 16) & 255)]!;
    s2 += t[512 + ((z >>> 16) & 255)]!;
    s0 += t[x >>> 24]!;
    s1 += t[256 + (y >>> 24)]!;
    s2 += t[512 + (z >>> 24)]!;
  }
  for (let i = words << 2; i < len; i++) {
    s0 += t[b0[i]!]!;
    s1 += t[256 + b1[i]!]!;
    s2 += t[512 + b2[i]!]!;
  }
  return [s0, s1, s2];
}

/**
 * The second pass of one byte band: its squared deviations (table `t` from 0) added in pixel order
 * (in wasm when the kernels are on, src/wasm/stats.ts: the same chain of additions, the same bits).
 */
function singleSquares(band: Uint8Array, mask: Uint8Array, all: boolean, t: Float64Array): number {
  const len = mask.length;
  const w = squaresInWasm([band], all ? undefined : mask, len, t);
  if (w !== undefined) return w[0]!;
  let m2 = 0;
  if (all && aligned(band, len)) {
    const words = len >> 2;
    const w = new Uint32Array(band.buffer, band.byteOffset, words);
    for (let k = 0; k < words; k++) {
      const x = w[k]!;
      m2 += t[x & 255]!;
      m2 += t[(x >>> 8) & 255]!;
      m2 += t[(x >>> 16) & 255]!;
      m2 += t[x >>> 24]!;
    }
    for (let i = words << 2; i < len; i++) m2 += t[band[i]!]!;
  } else if (all) for (let i = 0; i < len; i++) m2 += t[band[i]!]!;
  else for (let i = 0; i < len; i++) if (mask[i] !== 0) m2 += t[band[i]!]!;
  return m2;
}

/** Whether `momentsOf` takes byteMoments for this band. */
const byteBand = (band: ArrayLike<number>, mask: Uint8Array): band is Uint8Array =>
  band instanceof Uint8Array && band.length >= mask.length && mask.length < 2 ** 32;

/**
 * The moments of each band, `bands.map((b) => momentsOf(b, mask))` to the bit. U8 bands go in
 * groups of up to four whose second passes run in one loop: each band's sum still adds its pixels
 * one by one in pixel order (the same roundings), but the bands' chains of additions, each
 * waiting on the one before, now overlap. `histograms`: the byteHistogram of each U8 band under
 * `mask` when the caller has counted them already (undefined entries are counted here); `allValid`:
 * whether every pixel of `mask` is valid, when the caller knows it (maskAllValid).
 */
export function momentsOfBands(
  bands: readonly ArrayLike<number>[],
  mask: Uint8Array,
  histograms: readonly (Uint32Array | undefined)[] = [],
  allValid?: boolean,
): BandMoments[] {
  const out: BandMoments[] = [];
  const group: Uint8Array[] = [];
  const at: number[] = [];
  const given: (Uint32Array | undefined)[] = [];
  for (let b = 0; b < bands.length; b++) {
    const band = bands[b]!;
    out.push(emptyMoments());
    if (!byteBand(band, mask)) out[b] = momentsOf(band, mask);
    else {
      group.push(band);
      at.push(b);
      given.push(histograms[b]);
    }
  }
  const len = mask.length;
  const all = group.length > 0 && (allValid ?? maskAllValid(mask, 0, len));
  for (let g = 0; g < group.length; g += 4) {
    const k = Math.min(4, group.length - g);
    if (k === 1 && given[g] === undefined) {
      out[at[g]!] = byteMoments(group[g]!, mask);
      continue;
    }
    const t = squaredDeviation;
    const ms: BandMoments[] = [];
    for (let j = 0; j < k; j++) {
      const h = given[g + j] ?? byteHistogram(group[g + j]!, mask, all, scratchHistogram);
      const m = histogramMoments(h, t, 256 * j);
      if (m === undefined) break; // the same mask: no band of the group has a valid pixel
      ms.push(m);
    }
    if (ms.length < k) continue; // empty moments
    const s = k === 1 ? [singleSquares(group[g]!, mask, all, t)] : chainedSquares(group, g, k, mask, all, t);
    for (let j = 0; j < k; j++) {
      ms[j]!.m2 = s[j]!;
      out[at[g + j]!] = ms[j]!;
    }
  }
  return out;
}

/**
 * A chip's moments (momentsOfBands, the same bits) and the byteHistogram of each of its U8 bands
 * (undefined for other bands), which its GeoTIFF's statistics take too. One to four byte bands of the
 * mask's length are bound into wasm once for both passes (BoundByteBands) when the kernels are on;
 * otherwise, or when memory is out, histograms then momentsOfBands. `allValid`: maskAllValid(mask).
 */
export function chipMoments(
  bands: readonly ArrayLike<number>[],
  mask: Uint8Array,
  allValid: boolean,
): { moments: BandMoments[]; histograms: (Uint32Array | undefined)[] } {
  const len = mask.length;
  const bytes = bands.every((b): b is Uint8Array => b instanceof Uint8Array && b.length === len) && len < 2 ** 32;
  const bound = bytes && bands.length <= 4 ? BoundByteBands.bind(bands as Uint8Array[], allValid ? undefined : mask, len) : undefined;
  if (bound !== undefined) {
    try {
      const histograms = bands.map(() => new Uint32Array(1024));
      const t = squaredDeviation;
      const moments: BandMoments[] = [];
      let counted = true;
      for (let j = 0; j < bands.length && counted; j++) counted = bound.histogram(j, histograms[j]!);
      for (let j = 0; j < bands.length && counted; j++) {
        const m = histogramMoments(histograms[j]!, t, 256 * j);
        if (m === undefined) break; // the same mask: no band has a valid pixel
        moments.push(m);
      }
      const s = counted && moments.length === bands.length ? bound.squares(t) : undefined;
      if (counted && moments.length < bands.length) return { moments: bands.map(emptyMoments), histograms };
      if (s !== undefined) {
        for (let j = 0; j < bands.length; j++) moments[j]!.m2 = s[j]!;
        return { moments, histograms };
      }
    } finally {
      bound.release();
    }
  }
  const histograms = bands.map((b) => (b instanceof Uint8Array && b.length === len ? byteHistogram(b, mask, allValid) : undefined));
  return { moments: momentsOfBands(bands, mask, histograms, allValid), histograms };
}

/**
 * The second passes of `k` (2 to 4) byte bands from `group[g]` on, side by side (each in pixel
 * order; in wasm when the kernels are on, each band's chain the same).
 */
function chainedSquares(group: readonly Uint8Array[], g: number, k: number, mask: Uint8Array, all: boolean, t: Float64Array): number[] {
  const len = mask.length;
  const w = squaresInWasm(group.slice(g, g + k), all ? undefined : mask, len, t);
  if (w !== undefined) return w;
  const b0 = group[g]!;
  const b1 = group[g + 1]!;
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  if (k === 2) {
    if (all)
      for (let i = 0; i < len; i++) {
        s0 += t[b0[i]!]!;
        s1 += t[256 + b1[i]!]!;
      }
    else
      for (let i = 0; i < len; i++) {
        if (mask[i] === 0) continue;
        s0 += t[b0[i]!]!;
        s1 += t[256 + b1[i]!]!;
      }
    return [s0, s1];
  }
  const b2 = group[g + 2]!;
  if (k === 3) {
    if (all && aligned(b0, len) && aligned(b1, len) && aligned(b2, len)) return wordSquares3(b0, b1, b2, len, t);
    if (all)
      for (let i = 0; i < len; i++) {
        s0 += t[b0[i]!]!;
        s1 += t[256 + b1[i]!]!;
        s2 += t[512 + b2[i]!]!;
      }
    else
      for (let i = 0; i < len; i++) {
        if (mask[i] === 0) continue;
        s0 += t[b0[i]!]!;
        s1 += t[256 + b1[i]!]!;
        s2 += t[512 + b2[i]!]!;
      }
    return [s0, s1, s2];
  }
  const b3 = group[g + 3]!;
  if (all)
    for (let i = 0; i < len; i++) {
      s0 += t[b0[i]!]!;
      s1 += t[256 + b1[i]!]!;
      s2 += t[512 + b2[i]!]!;
      s3 += t[768 + b3[i]!]!;
    }
  else
    for (let i = 0; i < len; i++) {
      if (mask[i] === 0) continue;
      s0 += t[b0[i]!]!;
      s1 += t[256 + b1[i]!]!;
      s2 += t[512 + b2[i]!]!;
      s3 += t[768 + b3[i]!]!;
    }
  return [s0, s1, s2, s3];
}

export interface ClassInfo {
  readonly value: number;
  readonly name: string;
  readonly color: readonly [number, number, number];
}

/** Running min/max/sum/count, as the EAS `{Min, Max, Mean, Sum, Count}` objects. */
export interface Summary {
  min: number;
  max: number;
  sum: number;
  count: number;
}

export const emptySummary = (): Summary => ({ min: Infinity, max: -Infinity, sum: 0, count: 0 });
export function addToSummary(s: Summary, v: number): void {
  if (v < s.min) s.min = v;
  if (v > s.max) s.max = v;
  s.sum += v;
  s.count++;
}
const summaryJson = (s: Summary): Record<string, number> => ({
  Min: s.count ? s.min : 0,
  Max: s.count ? s.max : 0,
  Mean: s.count ? s.sum / s.count : 0,
  Sum: s.sum,
  Count: s.count,
});

/** Everything the metadata files need, accumulated chip by chip (plain data: JSON round-trips). */
export interface ExportStats {
  tiles: number;
  nextIndex: number;
  bands: BandMoments[];
  bands2?: BandMoments[];
  /** Vector labels: per class value. */
  featuresPerClass: Record<string, number>;
  imagesPerClass: Record<string, number>;
  areaPerClass: Record<string, Summary>;
  featuresPerImage: Summary;
  /** Raster labels: pixels per class value, and per-chip class counts. */
  pixelsPerClass: Record<string, Summary>;
  classesPerImage: Summary;
}

export const emptyStats = (bandCount: number, bandCount2?: number): ExportStats => ({
  tiles: 0,
  nextIndex: 0,
  bands: Array.from({ length: bandCount }, emptyMoments),
  ...(bandCount2 !== undefined ? { bands2: Array.from({ length: bandCount2 }, emptyMoments) } : {}),
  featuresPerClass: {},
  imagesPerClass: {},
  areaPerClass: {},
  featuresPerImage: emptySummary(),
  pixelsPerClass: {},
  classesPerImage: emptySummary(),
});

export interface ChipRecordStats {
  readonly bands: BandMoments[];
  readonly bands2?: BandMoments[];
  /** Label features in the chip: class value and area (map units squared). */
  readonly features: readonly { readonly classValue: number; readonly area: number }[];
  /** Raster labels: pixel count per class value in the chip. */
  readonly classPixels?: Readonly<Record<string, number>>;
}

/** Fold one chip into the totals; `classValues` lists every class so per-chip zero counts are summarised too. */
export function addChip(s: ExportStats, c: ChipRecordStats, classValues: readonly number[], index: number): void {
  s.tiles++;
  s.nextIndex = Math.max(s.nextIndex, index + 1);
  c.bands.forEach((m, b) => mergeMoments(s.bands[b]!, m));
  if (c.bands2 && s.bands2) c.bands2.forEach((m, b) => mergeMoments(s.bands2![b]!, m));
  addToSummary(s.featuresPerImage, c.features.length);
  const seen = new Set<number>();
  for (const f of c.features) {
    const k = String(f.classValue);
    s.featuresPerClass[k] = (s.featuresPerClass[k] ?? 0) + 1;
    addToSummary((s.areaPerClass[k] ??= emptySummary()), f.area);
    seen.add(f.classValue);
  }
  if (c.classPixels !== undefined) {
    let present = 0;
    for (const v of classValues) {
      const n = c.classPixels[String(v)] ?? 0;
      addToSummary((s.pixelsPerClass[String(v)] ??= emptySummary()), n);
      if (n > 0) {
        present++;
        seen.add(v);
      }
    }
    addToSummary(s.classesPerImage, present);
  }
  for (const v of seen) s.imagesPerClass[String(v)] = (s.imagesPerClass[String(v)] ?? 0) + 1;
}

/** Merge totals of an earlier export (append with startIndex) into `s`. */
export function mergeStats(s: ExportStats, earlier: ExportStats): void {
  s.tiles += earlier.tiles;
  s.nextIndex = Math.max(s.nextIndex, earlier.nextIndex);
  earlier.bands.forEach((m, b) => mergeMoments(s.bands[b]!, m));
  if (earlier.bands2 && s.bands2) earlier.bands2.forEach((m, b) => mergeMoments(s.bands2![b]!, m));
  const addCounts = (a: Record<string, number>, b: Record<string, number>): void => {
    for (const [k, v] of Object.entries(b)) a[k] = (a[k] ?? 0) + v;
  };
  const addSummaries = (a: Record<string, Summary>, b: Record<string, Summary>): void => {
    for (const [k, v] of Object.entries(b)) mergeSummary((a[k] ??= emptySummary()), v);
  };
  addCounts(s.featuresPerClass, earlier.featuresPerClass);
  addCounts(s.imagesPerClass, earlier.imagesPerClass);
  addSummaries(s.areaPerClass, earlier.areaPerClass);
  addSummaries(s.pixelsPerClass, earlier.pixelsPerClass);
  mergeSummary(s.featuresPerImage, earlier.featuresPerImage);
  mergeSummary(s.classesPerImage, earlier.classesPerImage);
}

function mergeSummary(a: Summary, b: Summary): void {
  if (b.count === 0) return;
  a.min = Math.min(a.min, b.min);
  a.max = Math.max(a.max, b.max);
  a.sum += b.sum;
  a.count += b.count;
}

export const WELL_KNOWN_BAND_NAMES = [
  'Red',
  'Green',
  'Blue',
  'Infrared',
  'CoastalBlue',
  'Yellow',
  'RedEdge',
  'ShortWaveInfrared',
  'NearInfrared',
  'NearInfrared_1',
  'NearInfrared_2',
  'MidInfrared',
  'MidInfrared_1',
  'MidInfrared_2',
  'Thermal',
  'Thermal_1',
  'Thermal_2',
  'Panchromatic',
  'PseudoRed',
  'PseudoGreen',
  'PseudoBlue',
  'QA',
];

export interface MetadataContext {
  readonly format: string;
  readonly tileSize: { readonly x: number; readonly y: number };
  readonly classes: readonly ClassInfo[];
  readonly instanceClasses?: readonly ClassInfo[];
  readonly info: RasterInfo;
  readonly info2?: RasterInfo;
  readonly rasterCount: number;
  readonly blackenAroundFeature: boolean;
  readonly fixChipSize: boolean;
  readonly imageSpace: 'MAP_SPACE' | 'PIXEL_SPACE';
  /** Labels from vector features (true) or a class raster (false); undefined: unlabeled. */
  readonly vectorLabels: boolean | undefined;
}

function cellSizeJson(info: RasterInfo): Record<string, unknown> {
  const wkid = info.spatialReference?.wkid;
  return { x: info.cellSize.x, y: info.cellSize.y, spatialReference: wkid !== undefined ? { wkid, latestWkid: wkid } : {} };
}

const rastersProps = (info: RasterInfo, count: number): Record<string, unknown> => ({
  RasterCount: count,
  SensorName: '',
  BandNames: Array.from({ length: info.bandCount }, (_, b) => info.bandNames?.[b] ?? ''),
});

const allTilesStats = (info: RasterInfo, bands: readonly BandMoments[]): Record<string, unknown>[] =>
  bands.map((m, b) => ({
    BandName: info.bandNames?.[b] ?? `Band_${b + 1}`,
    Min: m.num ? m.min : 0,
    Max: m.num ? m.max : 0,
    Mean: m.num ? m.m1 : 0,
    StdDev: m.num ? Math.sqrt(m.m2 / m.num) : 0,
  }));

const bandState = (bands: readonly BandMoments[]): Record<string, unknown>[] =>
  bands.map((m) => ({ Min: m.num ? m.min : 0, Max: m.num ? m.max : 0, Mean: 0, StdDev: 0, M1: m.m1, M2: m.m2, Num: m.num }));

/** The EMD template: placeholders for the model, real values for the data. */
export function modelDefinition(ctx: MetadataContext, s: ExportStats): Record<string, unknown> {
  const emd: Record<string, unknown> = {
    Framework: 'e.g. PyTorch',
    ModelConfiguration: 'e.g. FasterRCNN',
    ModelType: 'e.g. ObjectDetection',
    ModelFile: 'e.g. ./trained.model',
    Description: 'e.g. This is a trained model',
    ImageHeight: ctx.tileSize.y,
    ImageWidth: ctx.tileSize.x,
    ExtractBands: 'e.g. [0, 1, 2]',
    DataRange: 'e.g. [0, 1.0]',
    ModelPadding: 'e.g. 0',
    BatchSize: 'e.g. 1',
    PerProcessGPUMemoryFraction: 'e.g. 0.95',
    MetaDataMode: ctx.format,
    BlackenAroundFeature: ctx.blackenAroundFeature,
    IsMultidimensional: false,
    CropTileMode: ctx.fixChipSize ? 'Fixed_Size' : 'Variable_Size',
    ImageSpaceUsed: ctx.imageSpace,
    MinCellSize: cellSizeJson(ctx.info),
    MaxCellSize: cellSizeJson(ctx.info),
    Classes: ctx.classes.map((c) => ({ Value: c.value, Name: c.name, Color: [...c.color] })),
    InputRastersProps: rastersProps(ctx.info, ctx.rasterCount),
    AllTilesStats: allTilesStats(ctx.info, s.bands),
    'WellKnownBandNames (FYI, these band names can be used in ExtractBands)': WELL_KNOWN_BAND_NAMES,
  };
  if (ctx.info2 && s.bands2) {
    emd.InputRastersProps2 = rastersProps(ctx.info2, 1);
    emd.AllTilesStats2 = allTilesStats(ctx.info2, s.bands2);
  }
  if (ctx.instanceClasses) {
    emd.Panoptic_Segmentation_Instance_Classes = ctx.instanceClasses.map((c) => ({ Value: c.value, Name: c.name, Color: [...c.color] }));
  }
  return emd;
}

/** The EAS; per-class arrays follow the order of `classes` (the consumer indexes them by position). */
export function accumulatedStats(ctx: MetadataContext, s: ExportStats): Record<string, unknown> {
  const vals = ctx.classes.map((c) => String(c.value));
  const eas: Record<string, unknown> = {
    Version: 1,
    NumBands: ctx.info.bandCount,
    TileSizeX: ctx.tileSize.x,
    TileSizeY: ctx.tileSize.y,
    NumClasses: ctx.classes.length,
    NumTiles: s.tiles,
    NumTilesAsDouble: s.tiles,
    NextTileIndex: s.nextIndex,
    OutputFeatures: ctx.vectorLabels === true,
    MetaDataMode: ctx.format,
    MinCellSize: cellSizeJson(ctx.info),
    MaxCellSize: cellSizeJson(ctx.info),
    Classes: ctx.classes.map((c) => ({ ClassValue: c.value, ClassName: c.name, Color: [...c.color] })),
  };
  if (ctx.vectorLabels === true) {
    eas.FeatureStats = {
      NumClasses: ctx.classes.length,
      NumImagesTotal: s.tiles,
      NumFeaturesTotal: Object.values(s.featuresPerClass).reduce((a, b) => a + b, 0),
      NumImagesPerClass: vals.map((v) => s.imagesPerClass[v] ?? 0),
      NumFeaturesPerClass: vals.map((v) => s.featuresPerClass[v] ?? 0),
      NumFeaturesPerImage: summaryJson(s.featuresPerImage),
      FeatureAreaPerClass: vals.map((v) => summaryJson(s.areaPerClass[v] ?? emptySummary())),
    };
  }
  if (Object.keys(s.pixelsPerClass).length > 0) {
    eas.ClassPixelStats = {
      NumClasses: ctx.classes.length,
      NumImagesTotal: s.tiles,
      NumImagesPerClass: vals.map((v) => s.imagesPerClass[v] ?? 0),
      NumPixelsPerClass: vals.map((v) => s.pixelsPerClass[v]?.sum ?? 0),
      NumClassesPerImage: summaryJson(s.classesPerImage),
      PixelsPerClass: vals.map((v) => summaryJson(s.pixelsPerClass[v] ?? emptySummary())),
    };
  }
  eas.InputRastersProps = rastersProps(ctx.info, ctx.rasterCount);
  eas.BandStatsState = bandState(s.bands);
  if (ctx.info2 && s.bands2) {
    eas.InputRastersProps2 = rastersProps(ctx.info2, 1);
    eas.BandStatsState2 = bandState(s.bands2);
  }
  return eas;
}

/** Back from an EAS written earlier (append): the parts `mergeStats` needs. */
export function statsFromEas(eas: Record<string, unknown>, classes: readonly ClassInfo[]): ExportStats {
  const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
  const toMoments = (v: unknown): BandMoments[] =>
    arr(v).map((b) => {
      const o = b as Record<string, unknown>;
      const n = num(o.Num);
      return { min: n ? num(o.Min) : Infinity, max: n ? num(o.Max) : -Infinity, m1: num(o.M1), m2: num(o.M2), num: n };
    });
  const fromSummary = (v: unknown): Summary => {
    const o = (v ?? {}) as Record<string, unknown>;
    const c = num(o.Count);
    return { min: c ? num(o.Min) : Infinity, max: c ? num(o.Max) : -Infinity, sum: num(o.Sum), count: c };
  };
  const s = emptyStats(0);
  s.tiles = num(eas.NumTiles);
  s.nextIndex = num(eas.NextTileIndex);
  s.bands = toMoments(eas.BandStatsState);
  if (eas.BandStatsState2 !== undefined) s.bands2 = toMoments(eas.BandStatsState2);
  const fs = eas.FeatureStats as Record<string, unknown> | undefined;
  const cp = eas.ClassPixelStats as Record<string, unknown> | undefined;
  classes.forEach((c, i) => {
    const k = String(c.value);
    if (fs) {
      s.featuresPerClass[k] = num(arr(fs.NumFeaturesPerClass)[i]);
      s.imagesPerClass[k] = num(arr(fs.NumImagesPerClass)[i]);
      s.areaPerClass[k] = fromSummary(arr(fs.FeatureAreaPerClass)[i]);
    }
    if (cp) {
      s.imagesPerClass[k] = num(arr(cp.NumImagesPerClass)[i]);
      s.pixelsPerClass[k] = fromSummary(arr(cp.PixelsPerClass)[i]);
    }
  });
  if (fs) s.featuresPerImage = fromSummary(fs.NumFeaturesPerImage);
  if (cp) s.classesPerImage = fromSummary(cp.NumClassesPerImage);
  return s;
}

const pad = (s: string | number, n: number): string => String(s).padStart(n);
const fix2 = (v: number): string => v.toFixed(2);

/** The human-readable summary (contract §9). */
export function statsText(ctx: MetadataContext, s: ExportStats): string {
  const lines = [`images = ${s.tiles} *${ctx.info.bandCount}*${ctx.tileSize.y}*${ctx.tileSize.x}`];
  const row = (name: string, value: number, images: number, count: number, sum: Summary): string =>
    `${name.padEnd(20)}${pad(value, 11)}${pad(images, 11)}${pad(count, 11)}${pad(fix2(sum.count ? sum.min : 0), 12)}${pad(fix2(sum.count ? sum.sum / sum.count : 0), 12)}${pad(fix2(sum.count ? sum.max : 0), 12)}`;
  if (ctx.vectorLabels === true) {
    const total = Object.values(s.featuresPerClass).reduce((a, b) => a + b, 0);
    const f = s.featuresPerImage;
    lines.push('', 'Class feature statistics:', `features = ${total}`);
    lines.push(
      `features per image = [min = ${f.count ? f.min : 0}, mean = ${fix2(f.count ? f.sum / f.count : 0)}, max = ${f.count ? f.max : 0}]`,
    );
    lines.push(`classes = ${ctx.classes.length}`);
    lines.push(
      `${'cls name'.padEnd(20)}${pad('cls value', 11)}${pad('images', 11)}${pad('features', 11)}${pad('min size', 12)}${pad('mean size', 12)}${pad('max size', 12)}`,
    );
    for (const c of ctx.classes) {
      const k = String(c.value);
      lines.push(row(c.name, c.value, s.imagesPerClass[k] ?? 0, s.featuresPerClass[k] ?? 0, s.areaPerClass[k] ?? emptySummary()));
    }
  } else if (ctx.vectorLabels === false) {
    const f = s.classesPerImage;
    lines.push(`classes = ${ctx.classes.length}`);
    lines.push(
      `classes per image = [min = ${f.count ? f.min : 0}, mean = ${fix2(f.count ? f.sum / f.count : 0)}, max = ${f.count ? f.max : 0}]`,
    );
    lines.push(
      `${'cls name'.padEnd(20)}${pad('cls value', 11)}${pad('images', 11)}${pad('pixels', 11)}${pad('min size', 12)}${pad('mean size', 12)}${pad('max size', 12)}`,
    );
    for (const c of ctx.classes) {
      const k = String(c.value);
      const p = s.pixelsPerClass[k] ?? emptySummary();
      lines.push(row(c.name, c.value, s.imagesPerClass[k] ?? 0, p.sum, p));
    }
  }
  return `${lines.join('\n')}\n`;
}

/** JSON in the observed style (two-space indent, `" : "` separators). */
export function vendorJson(v: unknown): string {
  return `${JSON.stringify(v, null, 2).replace(/"([^"\\]*(?:\\.[^"\\]*)*)": /g, '"$1" : ')}\n`;
}

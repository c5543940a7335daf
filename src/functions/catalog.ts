/**
 * Every raster function's module by name, loaded on demand: the CLI compiles only the functions a
 * rule names (the bundle puts each in a chunk of its own), which saves about half of the engine's
 * code at every `render` and `validate`. functions/index.ts stays the registry of all of them (the
 * library's, the server's); catalog.test.ts checks that both list the same functions under the same
 * names and aliases.
 */
import { createRegistry, lookupKey, type RasterFunction, type Registry } from '../graph/types.js';

const LOADERS: Readonly<Record<string, () => Promise<RasterFunction>>> = {
  ArgStatistics: () => import('./local/arg-statistics.js').then((m) => m.argStatistics as RasterFunction),
  Arithmetic: () => import('./local/arithmetic.js').then((m) => m.arithmetic as RasterFunction),
  Aspect: () => import('./terrain/aspect.js').then((m) => m.aspect as RasterFunction),
  BandArithmetic: () => import('./spectral/band-arithmetic.js').then((m) => m.bandArithmetic as RasterFunction),
  CCDC: () => import('./change/ccdc.js').then((m) => m.ccdc as RasterFunction),
  Classify: () => import('./classify/classify.js').then((m) => m.classify as RasterFunction),
  Clip: () => import('./geometry/clip.js').then((m) => m.clip as RasterFunction),
  Colormap: () => import('./color/colormap.js').then((m) => m.colormap as RasterFunction),
  ColormapToRGB: () => import('./color/colormap-to-rgb.js').then((m) => m.colormapToRgb as RasterFunction),
  ColorspaceConversion: () => import('./bands/colorspace-conversion.js').then((m) => m.colorspaceConversion as RasterFunction),
  Complex: () => import('./local/complex.js').then((m) => m.complex as RasterFunction),
  CompositeBand: () => import('./bands/composite-band.js').then((m) => m.compositeBand as RasterFunction),
  ComputeChange: () => import('./change/compute-change.js').then((m) => m.computeChange as RasterFunction),
  ContrastBrightness: () => import('./radiometric/contrast-brightness.js').then((m) => m.contrastBrightness as RasterFunction),
  Convolution: () => import('./focal/convolution.js').then((m) => m.convolution as RasterFunction),
  CreateColorComposite: () => import('./spectral/create-color-composite.js').then((m) => m.createColorComposite as RasterFunction),
  Curvature: () => import('./terrain/curvature.js').then((m) => m.curvature as RasterFunction),
  DetectChange: () => import('./change/detect-change.js').then((m) => m.detectChange as RasterFunction),
  ElevationVoidFill: () => import('./terrain/elevation-void-fill.js').then((m) => m.elevationVoidFill as RasterFunction),
  ExtractBand: () => import('./bands/extract-band.js').then((m) => m.extractBand as RasterFunction),
  Geometric: () => import('./geometry/geometric.js').then((m) => m.geometric as RasterFunction),
  Grayscale: () => import('./spectral/grayscale.js').then((m) => m.grayscale as RasterFunction),
  Hillshade: () => import('./terrain/hillshade.js').then((m) => m.hillshade as RasterFunction),
  Identity: () => import('./local/identity.js').then((m) => m.identity as RasterFunction),
  Local: () => import('./local/local.js').then((m) => m.local as RasterFunction),
  Mask: () => import('./local/mask.js').then((m) => m.mask as RasterFunction),
  MLClassify: () => import('./classify/ml-classify.js').then((m) => m.mlClassify as RasterFunction),
  NDVI: () => import('./spectral/ndvi.js').then((m) => m.ndvi as RasterFunction),
  Pansharpening: () => import('./spectral/pansharpening.js').then((m) => m.pansharpening as RasterFunction),
  RasterCalculator: () => import('./local/raster-calculator.js').then((m) => m.rasterCalculator as RasterFunction),
  Recast: () => import('./local/recast.js').then((m) => m.recast as RasterFunction),
  Remap: () => import('./local/remap.js').then((m) => m.remap as RasterFunction),
  Resample: () => import('./geometry/resample.js').then((m) => m.resample as RasterFunction),
  SegmentMeanShift: () => import('./classify/segment-mean-shift.js').then((m) => m.segmentMeanShift as RasterFunction),
  ShadedRelief: () => import('./terrain/shaded-relief.js').then((m) => m.shadedRelief as RasterFunction),
  Slope: () => import('./terrain/slope.js').then((m) => m.slope as RasterFunction),
  Speckle: () => import('./focal/speckle.js').then((m) => m.speckle as RasterFunction),
  SpectralConversion: () => import('./spectral/spectral-conversion.js').then((m) => m.spectralConversion as RasterFunction),
  SpectralUnmixing: () => import('./classify/spectral-unmixing.js').then((m) => m.spectralUnmixing as RasterFunction),
  Statistics: () => import('./focal/statistics.js').then((m) => m.statistics as RasterFunction),
  StatisticsHistogram: () => import('./radiometric/statistics-histogram.js').then((m) => m.statisticsHistogram as RasterFunction),
  Stretch: () => import('./radiometric/stretch.js').then((m) => m.stretch as RasterFunction),
  SurfaceParamFunction: () => import('./terrain/surface-param.js').then((m) => m.surfaceParam as RasterFunction),
  TasseledCap: () => import('./spectral/tasseled-cap.js').then((m) => m.tasseledCap as RasterFunction),
  Threshold: () => import('./radiometric/threshold.js').then((m) => m.threshold as RasterFunction),
  TransposeBits: () => import('./bands/transpose-bits.js').then((m) => m.transposeBits as RasterFunction),
  Trend: () => import('./change/trend.js').then((m) => m.trend as RasterFunction),
  TrendAnalysis: () => import('./change/trend-analysis.js').then((m) => m.trendAnalysis as RasterFunction),
  TrendToRGB: () => import('./change/trend-to-rgb.js').then((m) => m.trendToRgb as RasterFunction),
  UnitConversion: () => import('./local/unit-conversion.js').then((m) => m.unitConversion as RasterFunction),
  VectorField: () => import('./vector/vector-field.js').then((m) => m.vectorField as RasterFunction),
  VectorFieldRenderer: () => import('./vector/vector-field-renderer.js').then((m) => m.vectorFieldRenderer as RasterFunction),
  WeightedOverlay: () => import('./local/weighted-overlay.js').then((m) => m.weightedOverlay as RasterFunction),
  WeightedSum: () => import('./local/weighted-sum.js').then((m) => m.weightedSum as RasterFunction),
};

/** Aliases, to the name under which LOADERS holds the function. */
const ALIASES: Readonly<Record<string, string>> = {
  AnalyzeChangesUsingCCDC: 'CCDC',
  ComputeChangeRaster: 'ComputeChange',
  DetectChangeUsingChangeAnalysisRaster: 'DetectChange',
  Greyscale: 'Grayscale',
  Pansharpen: 'Pansharpening',
  Calculator: 'RasterCalculator',
  LinearSpectralUnmixing: 'SpectralUnmixing',
  FocalStatistics: 'Statistics',
  PredictUsingTrend: 'Trend',
  GenerateTrend: 'TrendAnalysis',
};

const BY_KEY = new Map<string, () => Promise<RasterFunction>>();
for (const [name, load] of Object.entries(LOADERS)) BY_KEY.set(lookupKey(name), load);
for (const [alias, name] of Object.entries(ALIASES)) BY_KEY.set(lookupKey(alias), LOADERS[name]!);

/** The names and aliases the catalog answers to (for the test). */
export const catalogNames = (): readonly string[] => [...Object.keys(LOADERS), ...Object.keys(ALIASES)];

/** The function named `name` (any case, an alias too), or undefined. */
export function loadFunction(name: string): Promise<RasterFunction> | undefined {
  return BY_KEY.get(lookupKey(name))?.();
}

/** The registry of every function (functions/index.ts), loaded on demand. */
export const loadRegistry = (): Promise<Registry> => import('./index.js').then((m) => m.registry);

/**
 * A registry of the functions a rule (JSON text) may name: each function whose name or alias is a
 * string anywhere in the rule, in any case, also with a `Function` suffix (the long template form's
 * `function.type`). Resolving a rule that names only functions gives the same result with it as
 * with the whole registry; for anything else (a template or unknown name, a rule that is not JSON)
 * the caller resolves again with `loadRegistry()`, so errors and their did-you-mean are the same.
 */
export async function registryFor(ruleJson: string): Promise<Registry> {
  let rule: unknown;
  try {
    rule = JSON.parse(ruleJson);
  } catch {
    return loadRegistry();
  }
  const wanted = new Set<() => Promise<RasterFunction>>();
  const visit = (v: unknown): void => {
    if (typeof v === 'string') {
      const load = BY_KEY.get(lookupKey(v)) ?? BY_KEY.get(lookupKey(v.replace(/function$/i, '')));
      if (load) wanted.add(load);
    } else if (Array.isArray(v)) {
      for (const x of v) visit(x);
    } else if (typeof v === 'object' && v !== null) {
      for (const x of Object.values(v)) visit(x);
    }
  };
  visit(rule);
  return createRegistry(await Promise.all([...wanted].map((load) => load())));
}

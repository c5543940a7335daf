/**
 * The registry: an explicit, sorted list of every raster function (no side-effect imports).
 * Adding a function touches six places (its file, this list and catalog.ts, the well-known names, a
 * tiling case, a golden and the README table): CONTRIBUTING.md lists them.
 */
import { createRegistry, type RasterFunction, type Registry } from '../graph/types.js';
import { colorspaceConversion } from './bands/colorspace-conversion.js';
import { compositeBand } from './bands/composite-band.js';
import { extractBand } from './bands/extract-band.js';
import { transposeBits } from './bands/transpose-bits.js';
import { ccdc } from './change/ccdc.js';
import { computeChange } from './change/compute-change.js';
import { detectChange } from './change/detect-change.js';
import { trend } from './change/trend.js';
import { trendAnalysis } from './change/trend-analysis.js';
import { trendToRgb } from './change/trend-to-rgb.js';
import { classify } from './classify/classify.js';
import { mlClassify } from './classify/ml-classify.js';
import { segmentMeanShift } from './classify/segment-mean-shift.js';
import { spectralUnmixing } from './classify/spectral-unmixing.js';
import { colormap } from './color/colormap.js';
import { colormapToRgb } from './color/colormap-to-rgb.js';
import { convolution } from './focal/convolution.js';
import { speckle } from './focal/speckle.js';
import { statistics } from './focal/statistics.js';
import { clip } from './geometry/clip.js';
import { geometric } from './geometry/geometric.js';
import { resample } from './geometry/resample.js';
import { argStatistics } from './local/arg-statistics.js';
import { arithmetic } from './local/arithmetic.js';
import { complex } from './local/complex.js';
import { identity } from './local/identity.js';
import { local } from './local/local.js';
import { mask } from './local/mask.js';
import { rasterCalculator } from './local/raster-calculator.js';
import { recast } from './local/recast.js';
import { remap } from './local/remap.js';
import { unitConversion } from './local/unit-conversion.js';
import { weightedOverlay } from './local/weighted-overlay.js';
import { weightedSum } from './local/weighted-sum.js';
import { contrastBrightness } from './radiometric/contrast-brightness.js';
import { statisticsHistogram } from './radiometric/statistics-histogram.js';
import { stretch } from './radiometric/stretch.js';
import { threshold } from './radiometric/threshold.js';
import { bandArithmetic } from './spectral/band-arithmetic.js';
import { createColorComposite } from './spectral/create-color-composite.js';
import { grayscale } from './spectral/grayscale.js';
import { ndvi } from './spectral/ndvi.js';
import { pansharpening } from './spectral/pansharpening.js';
import { spectralConversion } from './spectral/spectral-conversion.js';
import { tasseledCap } from './spectral/tasseled-cap.js';
import { aspect } from './terrain/aspect.js';
import { curvature } from './terrain/curvature.js';
import { elevationVoidFill } from './terrain/elevation-void-fill.js';
import { hillshade } from './terrain/hillshade.js';
import { shadedRelief } from './terrain/shaded-relief.js';
import { slope } from './terrain/slope.js';
import { surfaceParam } from './terrain/surface-param.js';
import { vectorField } from './vector/vector-field.js';
import { vectorFieldRenderer } from './vector/vector-field-renderer.js';

export const builtinFunctions: readonly RasterFunction[] = [
  argStatistics,
  arithmetic,
  aspect,
  bandArithmetic,
  ccdc,
  classify,
  clip,
  colormap,
  colormapToRgb,
  colorspaceConversion,
  complex,
  compositeBand,
  computeChange,
  contrastBrightness,
  convolution,
  createColorComposite,
  curvature,
  detectChange,
  elevationVoidFill,
  extractBand,
  geometric,
  grayscale,
  hillshade,
  identity,
  local,
  mask,
  mlClassify,
  ndvi,
  pansharpening,
  rasterCalculator,
  recast,
  remap,
  resample,
  segmentMeanShift,
  shadedRelief,
  slope,
  speckle,
  spectralConversion,
  spectralUnmixing,
  statistics,
  statisticsHistogram,
  stretch,
  surfaceParam,
  tasseledCap,
  threshold,
  transposeBits,
  trend,
  trendAnalysis,
  trendToRgb,
  unitConversion,
  vectorField,
  vectorFieldRenderer,
  weightedOverlay,
  weightedSum,
] as readonly RasterFunction[];

export const registry: Registry = createRegistry(builtinFunctions);

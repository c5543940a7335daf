/** The function names spec section 8 (rule 8) calls well-known, plus those it specifies below the list. */
export const WELL_KNOWN_FUNCTIONS: readonly string[] = [
  'ArgStatistics', 'Arithmetic', 'Aspect', 'BandArithmetic', 'Classify', 'Clip', 'Colormap', 'ColormapToRGB',
  'Complex', 'CompositeBand', 'ContrastBrightness', 'Convolution', 'CreateColorComposite', 'Curvature',
  'ElevationVoidFill', 'ExtractBand', 'Geometric', 'Grayscale', 'Greyscale', 'Identity', 'Hillshade', 'Local',
  'Mask', 'MLClassify', 'NDVI', 'Pansharpening', 'RasterCalculator', 'Recast', 'Remap', 'Resample',
  'SegmentMeanShift', 'ShadedRelief', 'Slope', 'Statistics', 'StatisticsHistogram', 'Stretch',
  'SurfaceParamFunction', 'TasseledCap', 'Threshold', 'TransposeBits', 'UnitConversion', 'VectorField',
  'VectorFieldRenderer', 'WeightedSum', 'WeightedOverlay', 'CCDC', 'ColorspaceConversion', 'ComputeChange',
  'DetectChange', 'Speckle', 'SpectralConversion', 'SpectralUnmixing', 'Trend', 'TrendAnalysis', 'TrendToRGB',
];

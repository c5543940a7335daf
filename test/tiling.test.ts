/**
 * The evaluator's invariant, for every registered function: rendering in odd-sized tiles equals
 * rendering whole, bit for bit (values of valid pixels and the mask). Every function must have at
 * least one case here; argument sets that take different code paths each get one.
 */
import { describe, expect, it } from 'vitest';
import { builtinFunctions } from '../src/functions/index.js';
import type { RasterNode } from '../src/graph/types.js';
import { applyFunction, complexOf, constant, mdRasterOf, rasterOf, tiledVersusWhole } from './helpers.js';

// A DEM-like surface with relief in every direction and NoData holes (single pixels and a block).
const W = 61;
const H = 47;
const holes = new Uint8Array(W * H).fill(1);
for (const [x, y] of [
  [10, 10],
  [11, 10],
  [30, 5],
  [0, 20],
  [60, 46],
  [45, 30],
] as const)
  holes[y * W + x] = 0;
for (let y = 20; y < 24; y++) for (let x = 25; x < 29; x++) holes[y * W + x] = 0;
const surface = (x: number, y: number): number =>
  500 + 120 * Math.sin(x / 7) * Math.cos(y / 5) + 3 * x - 2 * y + ((x * 7919 + y * 104729) % 13);

const dem = rasterOf({ width: W, height: H, cellSize: 30 }, surface, holes);
const demGeo = rasterOf({ width: W, height: H, cellSize: 1 / 1200, geographic: true, origin: { x: -84.4, y: 36.7 } }, surface, holes);
const bands = rasterOf(
  { width: W, height: H, cellSize: 30, bandCount: 3, pixelType: 'U8' },
  (x, y, b) => (x * 3 + y * 5 + b * 40) % 256,
  holes,
);
const s16 = rasterOf({ width: W, height: H, cellSize: 30, pixelType: 'S16' }, (x, y) => x * 11 - y * 13);
const u8 = rasterOf({ width: W, height: H, cellSize: 30, pixelType: 'U8' }, (x, y) => (x * 7 + y * 3) % 256, holes);
/** A registered function applied to inputs (a node to feed another function, e.g. a colormap source). */
const byName = (name: string, args: Record<string, unknown>, inputs: readonly RasterNode[]): RasterNode =>
  applyFunction(
    builtinFunctions.find((f) => f.name === name)!,
    args,
    inputs,
  );
const colormapped = (entries: number[][]): RasterNode => byName('Colormap', { Colormap: entries }, [s16]);
// Multidimensional pairs (MatchVariable / UnionDimension): 3 dates x 2 bands with NaN slices, 2 dates x 1 band, a u/v pair.
const mdA = mdRasterOf(
  { width: W, height: H, cellSize: 30 },
  [{ name: 'm', values: [2001, 2002, 2003], bandsPerSlice: 2 }],
  (x, y, b) => ((x + y + (b >> 1)) % 11 === 0 ? Number.NaN : 1 + ((x * 3 + y * 5 + b * 7) % 9)),
  holes,
);
const mdB = mdRasterOf({ width: W, height: H, cellSize: 30 }, [{ name: 'm', values: [2002, 2003] }], (x, y, k) =>
  (2 * x + y + k) % 13 === 0 ? Number.NaN : 1 + ((x + y * 3 + k) % 9),
);

interface Case {
  readonly args: Record<string, unknown>;
  readonly inputs: readonly RasterNode[];
}

const CASES: Record<string, readonly Case[]> = {
  Hillshade: [
    { args: {}, inputs: [dem] },
    { args: { HillshadeType: 1 }, inputs: [dem] },
    { args: { SlopeType: 3, Azimuth: 100, Altitude: 20, ZFactor: 2 }, inputs: [dem] },
    { args: { RemoveEdgeEffect: true }, inputs: [dem] },
    { args: {}, inputs: [demGeo] },
    { args: { GeographicCellSize: 'Vendor111000', SlopeType: 3 }, inputs: [demGeo] },
  ],
  Slope: [
    { args: {}, inputs: [dem] },
    { args: { SlopeType: 2 }, inputs: [dem] },
    { args: { SlopeType: 3 }, inputs: [dem] },
    { args: { RemoveEdgeEffect: true }, inputs: [dem] },
    { args: {}, inputs: [demGeo] },
    { args: { GeographicCellSize: 'Vendor111000' }, inputs: [demGeo] },
    { args: { SlopeType: 3, RemoveEdgeEffect: true }, inputs: [demGeo] },
  ],
  Aspect: [
    { args: {}, inputs: [dem] },
    { args: { RemoveEdgeEffect: true }, inputs: [dem] },
    { args: {}, inputs: [demGeo] },
    { args: { GeographicCellSize: 'Vendor111000' }, inputs: [demGeo] },
  ],
  Curvature: [0, 1, 2].flatMap((Type) => [
    { args: { Type, ZFactor: 2 }, inputs: [dem] },
    { args: { Type, RemoveEdgeEffect: true }, inputs: [dem] },
    { args: { Type }, inputs: [demGeo] },
    { args: { Type, GeographicCellSize: 'Vendor111000' }, inputs: [demGeo] },
  ]),
  ShadedRelief: [
    { args: {}, inputs: [dem] },
    { args: { HillshadeType: 1, Colorramp: 'Slope' }, inputs: [dem] },
    {
      args: {
        RemoveEdgeEffect: true,
        Colormap: Array.from({ length: 400 }, (_, i) => [300 + i, i % 256, (3 * i) % 256, (7 * i) % 256]).filter((e) => e[0]! % 7 !== 0),
      },
      inputs: [dem],
    },
    { args: { HillshadeType: 1 }, inputs: [demGeo] },
  ],
  SurfaceParamFunction: [
    { args: {}, inputs: [dem] },
    { args: { SurfaceCalculation: 1, AnalysisScaleWithUnits: '150 Meters' }, inputs: [dem] },
    { args: { SurfaceCalculation: 2, LocalSurface: 2, AnalysisScaleWithUnits: 90 }, inputs: [dem] },
    { args: { SurfaceCalculation: 5 }, inputs: [dem] },
    { args: { SurfaceCalculation: 9, AnalysisScaleWithUnits: 90, UseAdaptiveScale: true }, inputs: [dem] },
    { args: { SurfaceCalculation: 5, ProjectAzimuths: true, UseEquatorialAspect: true }, inputs: [demGeo] },
    { args: { SlopeType: 2 }, inputs: [demGeo] },
  ],
  Convolution: [
    ...[0, 4, 10, 11, 13, 15, 17, 19, 21].map((Type) => ({ args: { Type }, inputs: [dem] })),
    ...[12, 14, 16].map((Type) => ({ args: { Type }, inputs: [bands] })),
    { args: { Type: 13 }, inputs: [u8] },
    { args: { Columns: 7, Rows: 5, Kernel: Array.from({ length: 35 }, (_, i) => (1 + (i % 7)) * (1 + Math.floor(i / 7))) }, inputs: [dem] },
    { args: { Columns: 4, Rows: 3, Kernel: '1 -2 3 0.5 2 0 -1 4 0 1 1 -3' }, inputs: [dem] },
    {
      args: {
        Kernel: [
          [1, 0, -1],
          [0, 0, 0],
          [-1, 0, 1],
        ],
      },
      inputs: [s16],
    },
  ],
  Statistics: [
    ...[1, 2, 3, 4, 5, 6, 7].flatMap((Type): Case[] => [
      { args: { Type }, inputs: [dem] },
      { args: { Type, Columns: 6, Rows: 3, FillNoDataOnly: true }, inputs: [dem] },
      { args: { Type, Columns: 1, Rows: 7 }, inputs: [bands] },
    ]),
    { args: { Type: 'StandardDeviation', KernelColumns: 15, KernelRows: 11 }, inputs: [s16] },
    { args: { Type: 'Mean', KernelColumns: 15, KernelRows: 11, FillNoDataOnly: true }, inputs: [u8] },
  ],
  Speckle: [
    ...[0, 1, 2].map((NoiseModel) => ({ args: { NoiseModel, NoiseVar: 30, AdditiveNoiseMean: 1, NLooks: 2 }, inputs: [dem] })),
    ...[1, 2, 3].map((FilterType) => ({ args: { FilterType, FilterSize: 2 }, inputs: [dem] })),
    { args: { FilterType: 2, FilterSize: 4, DampFactor: 3 }, inputs: [bands] },
    { args: { FilterType: 3, FilterSize: 1 }, inputs: [u8] },
  ],
  ElevationVoidFill: [
    { args: {}, inputs: [dem] },
    { args: { MaxVoidWidth: 90 }, inputs: [dem] },
    { args: { MaxVoidWidth: -1 }, inputs: [dem] },
  ],
  Identity: [{ args: {}, inputs: [bands] }],
  // Classify per pixel, and per segment of a block-id Raster2 (whole-image context).
  Classify: [
    [bands],
    [bands, rasterOf({ width: W, height: H, cellSize: 30, pixelType: 'U16' }, (x, y) => Math.floor(x / 9) + 10 * Math.floor(y / 7), holes)],
  ].map((inputs) => ({
    args: {
      ClassifierDefinition: {
        Definitions: [
          {
            Classifier: 'MaximumLikelihood',
            NumberBands: 3,
            Classes: [60, 130, 200].map((m, k) => ({
              ClassValue: k + 1,
              ClassName: `c${k}`,
              Means: [m, m + 40, m - 30],
              Covariances: [
                [400 + 300 * k, 50, 0],
                [50, 500, 20],
                [0, 20, 900 - 300 * k],
              ],
            })),
          },
        ],
      },
    },
    inputs,
  })),
  MLClassify: [
    {
      args: {
        SignatureFile:
          '1 2 3 3\n1 10 a\n60 100 140\n1 400 50 0\n2 50 500 20\n3 0 20 600\n2 10 b\n180 200 220\n1 300 0 0\n2 0 300 0\n3 0 0 300',
      },
      inputs: [bands],
    },
  ],
  SpectralUnmixing: [
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ].map(([NonNegative, SumToOne]) => ({
    args: { NonNegative, SumToOne, SpectralProfileDefinition: { a: [20, 60, 100], b: [200, 150, 90], c: [90, 240, 30] } },
    inputs: [bands],
  })),
  SegmentMeanShift: [
    { args: {}, inputs: [bands] },
    {
      args: { SpectralRadius: 3, SpatialRadius: 2, MinNumPixelsPerSegment: 5, MaxNumPixelsPerSegment: 40, BoundariesOnly: true },
      inputs: [bands],
    },
  ],
  Complex: [
    {
      args: {},
      inputs: [complexOf({ width: W, height: H, cellSize: 30, bandCount: 2 }, (x, y, b) => [surface(x, y) - 600, b * x - y], holes)],
    },
    { args: {}, inputs: [complexOf({ width: W, height: H, cellSize: 30, pixelType: 'C128' }, (x, y) => [x * 1e200, y * 1e-200], holes)] },
  ],
  UnitConversion: [
    { args: { FromUnit: 9, ToUnit: 3 }, inputs: [dem] },
    { args: { FromUnit: 201, ToUnit: 202 }, inputs: [s16] },
    { args: { FromUnit: 102, ToUnit: 102 }, inputs: [bands] },
  ],
  TransposeBits: [
    { args: { InputBitPositions: [4, 5], OutputBitPositions: [0, 1], ConstantFillValue: 0 }, inputs: [s16] },
    { args: { InputBitPositions: [0, 15], OutputBitPositions: [20, 3], ConstantFillCheck: true, ConstantFillValue: 255 }, inputs: [s16] },
    { args: { InputBitPositions: [1, 2], OutputBitPositions: [7, 6] }, inputs: [bands, u8] },
  ],
  Recast: [
    { args: {}, inputs: [bands] },
    { args: { Azimuth: 10 }, inputs: [byName('Hillshade', { Azimuth: 10 }, [dem])] },
  ],
  VectorField: [
    { args: {}, inputs: [dem, s16] },
    { args: { InputDataType: 'Vector-MagDir', OutputDataType: 'Vector-UV', AngleReferenceSystem: 1 }, inputs: [dem, s16] },
    { args: { Raster2: '$2' }, inputs: [mdB, mdB] },
  ],
  VectorFieldRenderer: ['Vector Average', 'Nearest neighbor', 'Bilinear', 'Cubic', 'Minimum', 'Maximum'].flatMap((CalculationMethod) =>
    ['Single Arrow', 'Wind Barb', 'Ocean Current (Knots)'].map((SymbologyName) => ({
      args: { CalculationMethod, SymbologyName, SymbolTileSize: 9, MaximumSymbolSize: 20, MinimumMagnitude: 0, MaximumMagnitude: 200 },
      inputs: [bands],
    })),
  ),
  ExtractBand: [{ args: { BandIDs: [2, 0, 0] }, inputs: [bands] }],
  // Radiometric: request statistics (DRA, Otsu) are taken over the whole render area, so tiles agree.
  Stretch: [
    { args: { StretchType: 6, MinPercent: 1, MaxPercent: 2, DRA: true }, inputs: [bands] },
    { args: { StretchType: 3, DRA: true, Min: 0, Max: 1000 }, inputs: [dem] },
    { args: { StretchType: 4, DRA: true }, inputs: [s16] },
    { args: { StretchType: 5, DRAExtent: { x: 5, y: 5, width: 20, height: 10 }, UseGamma: true, Gamma: [2.5] }, inputs: [dem] },
    { args: { StretchType: 9, DRA: true, SigmoidStrengthLevel: 4, Min: 0.5, Max: 9.5 }, inputs: [s16] },
    { args: { StretchType: 5, Statistics: [[0, 255, 100, 30]], UseGamma: true, ComputeGamma: true }, inputs: [bands] },
    { args: { StretchType: 0 }, inputs: [dem] },
    { args: { StretchType: 6, MinPercent: 2, MaxPercent: 2, DRA: true }, inputs: [byName('Hillshade', {}, [dem])] },
  ],
  Threshold: [
    { args: {}, inputs: [bands] },
    { args: {}, inputs: [dem] },
    { args: {}, inputs: [byName('Stretch', { StretchType: 3, DRA: true }, [dem])] },
  ],
  ContrastBrightness: [
    { args: { ContrastOffset: 30, BrightnessOffset: -10 }, inputs: [bands] },
    { args: { ContrastOffset: -50 }, inputs: [u8] },
  ],
  StatisticsHistogram: [
    {
      args: {
        Statistics: [{ min: 0, max: 255, mean: 120, standardDeviation: 40 }],
        Histograms: [{ size: 2, min: 0, max: 255, counts: [5, 7] }],
      },
      inputs: [bands],
    },
  ],
  Colormap: [
    {
      args: {
        Colormap: [
          [-100, 1, 2, 3],
          [0, 4, 5, 6],
          [37, 7, 8, 9, 0],
        ],
      },
      inputs: [s16],
    },
    { args: { ColorrampName: 'Slope' }, inputs: [s16] },
    { args: { ColormapName: 'Random' }, inputs: [u8] },
  ],
  ColormapToRGB: [
    {
      args: {},
      inputs: [
        colormapped(Array.from({ length: 300 }, (_, i) => [-300 + 4 * i, i % 256, (3 * i) % 256, (7 * i) % 256, i % 5 === 0 ? 0 : 255])),
      ],
    },
    {
      args: { UnmappedAsRandomColor: true },
      inputs: [
        colormapped([
          [-2_000_000, 1, 2, 3],
          [0, 9, 9, 9],
          [22, 4, 5, 6],
          [3_000_000, 7, 8, 9],
        ]),
      ],
    },
    { args: {}, inputs: [byName('Colormap', { ColormapName: 'NDVI3' }, [u8])] },
  ],
  ColorspaceConversion: [
    { args: {}, inputs: [bands] },
    { args: { ConversionType: 1 }, inputs: [bands] },
    { args: { ConversionType: 1 }, inputs: [byName('ColorspaceConversion', {}, [bands])] },
  ],
  Grayscale: [
    { args: {}, inputs: [bands] },
    { args: { ConversionParameters: [1, 3, 2] }, inputs: [bands] },
    { args: { ConversionParameters: '-0.5' }, inputs: [dem] },
  ],
  // Issue 5 part B (Remap ... Clip); inputs at 60 m and a 4-band source with sensor metadata.
  Remap: [
    { args: { InputRanges: [0, 100, 100, 200, 150, 256], OutputValues: [1, 2, 3], NoDataRanges: [40, 45] }, inputs: [u8] },
    {
      args: { InputRanges: [400, 500, 500, 600], OutputValues: [1, 2], AllowUnmatched: true, IsLastInputRangeInclusive: true },
      inputs: [dem],
    },
    {
      args: {
        InputRanges: [0, 300],
        OutputValues: [7],
        GeometryType: 'esriGeometryPolygon',
        Geometries: [
          {
            rings: [
              [
                [100, -100],
                [1500, -300],
                [700, -1200],
                [100, -100],
              ],
              [
                [400, -400],
                [800, -450],
                [600, -700],
                [400, -400],
              ],
            ],
          },
          { xmin: 1000, ymin: -1400, xmax: 1700, ymax: -900 },
        ],
      },
      inputs: [s16],
    },
  ],
  Mask: [
    { args: { NoDataValues: ['0 40', '', '200'], IncludedRanges: [10, 250, 0, 200] }, inputs: [bands] },
    { args: { NoDataValues: ['1 2 3 4 5 6', '41 42 43 44 45', '81 82 83 84 85'], NoDataInterpretation: 1 }, inputs: [bands] },
  ],
  WeightedSum: [
    { args: { Weights: [0.5, -2, 0.25] }, inputs: [dem, s16, u8] },
    {
      args: { Weights: [1, 1] },
      inputs: [dem, rasterOf({ width: 31, height: 24, cellSize: 60, origin: { x: -15, y: 20 } }, (x, y) => x * y)],
    },
  ],
  WeightedOverlay: [
    {
      args: {
        Influences: [60, 40],
        Remaps: ['0 99 1, 100 199 5, 200 255 9', '-1000 -100 RESTRICTED, -100 0 3, 0 1000 7, NODATA 2'],
        EvalFrom: 1,
        EvalTo: 9,
      },
      inputs: [u8, s16],
    },
    {
      args: { Influences: [1, 1], Remaps: ['1 3 1, 4 6 5, 7 RESTRICTED, 8 9 9', '1 4 2, 5 9 8, NODATA 1'], EvalFrom: 1, EvalTo: 9 },
      inputs: [mdB, mdB],
    },
  ],
  ArgStatistics: [
    ...[0, 1, 2].map((ArgStatisticsType) => ({ args: { ArgStatisticsType, UndefinedClass: 99 }, inputs: [bands, u8] })),
    { args: { ArgStatisticsType: 3, MinValue: 50, MaxValue: 150 }, inputs: [bands, u8] },
    ...[0, 2].map((ArgStatisticsType) => ({ args: { ArgStatisticsType }, inputs: [mdA, mdB] })),
    { args: { ArgStatisticsType: 3, MinValue: 2, MaxValue: 7 }, inputs: [mdA, mdB] },
  ],
  SpectralConversion: [{ args: { ConversionMatrix: [0.5, 0.3, 0.2, -1, 1, 0, 0.1, 0.1, 0.8] }, inputs: [bands] }],
  TasseledCap: [
    {
      args: {},
      inputs: [
        rasterOf(
          { width: W, height: H, cellSize: 30, bandCount: 4, pixelType: 'U16', extra: { sensorName: 'QuickBird', radiometry: 'source' } },
          (x, y, b) => 200 + ((x * 13 + y * 7 + b * 50) % 400),
          holes,
        ),
      ],
    },
    {
      args: { SensorName: 'Landsat 8 OLI' },
      inputs: [
        rasterOf(
          { width: W, height: H, cellSize: 30, bandCount: 7, extra: { radiometry: 'source' } },
          (x, y, b) => 0.01 * ((x + 2 * y + 5 * b) % 50),
          holes,
        ),
      ],
    },
  ],
  Pansharpening: [0, 1, 2, 3, 4].map((PansharpeningType) => ({
    args: { PansharpeningType },
    inputs: [
      dem,
      rasterOf(
        { width: 31, height: 24, cellSize: 60, bandCount: 4, pixelType: 'U16', origin: { x: -30, y: 0 } },
        (x, y, b) => 300 + ((x * 17 + y * 11 + b * 90) % 300),
      ),
    ],
  })),
  Clip: [
    {
      args: {
        ClippingGeometry: {
          rings: [
            [
              [100, -100],
              [1500, -300],
              [700, -1200],
              [100, -100],
            ],
            [
              [400, -400],
              [800, -450],
              [600, -700],
              [400, -400],
            ],
          ],
        },
      },
      inputs: [dem],
    },
    {
      args: {
        ClippingGeometry: {
          rings: [
            [
              [100, -100],
              [1500, -300],
              [700, -1200],
              [100, -100],
            ],
          ],
        },
        ClippingType: 2,
      },
      inputs: [bands],
    },
  ],
  CompositeBand: [
    { args: {}, inputs: [bands, dem, s16] },
    { args: {}, inputs: [mdA, mdB, u8] },
  ],
  BandArithmetic: [
    ...[1, 2, 5, 9].map((Method) => ({ args: { Method, BandIndexes: Method === 9 ? '3 2 1' : '2 1' }, inputs: [bands] })),
    { args: { BandIndexes: '(B2 - B1) / (B2 + B1) * B3' }, inputs: [bands] },
  ],
  NDVI: [false, true].map((ScientificOutput) => ({ args: { VisibleBandID: 0, InfraredBandID: 2, ScientificOutput }, inputs: [bands] })),
  CreateColorComposite: [
    { args: { Method: 1, BandIndexesR: 'B3', BandIndexesG: 'B2', BandIndexesB: 'B1' }, inputs: [bands] },
    { args: { Method: 1, BandIndexesR: '(B3 - B1)/(B3 + B1)', BandIndexesG: 'B2', BandIndexesB: 'B1 * 2' }, inputs: [bands] },
  ],
  Local: [
    { args: { Operation: 1 }, inputs: [bands, dem] },
    { args: { Operation: 35 }, inputs: [s16] },
    { args: { Operation: 78 }, inputs: [u8, dem, s16] },
    { args: { Operation: 68 }, inputs: [dem, u8, s16] },
    { args: { Operation: 41, ProcessAsMultiband: false }, inputs: [bands, u8] },
    { args: { Operation: 93, PercentileValue: 75 }, inputs: [dem, u8, s16, constant([300])] },
  ],
  RasterCalculator: [
    { args: { InputNames: ['d', 'b'], Expression: 'Con(IsNull(d), -1, Sqrt(d) * (b > 100))' }, inputs: [dem, u8] },
    { args: { InputNames: ['m', 'k'], Expression: 'm / k - Ln(m + 1)' }, inputs: [bands, constant([2])] },
  ],
  Arithmetic: [1, 2, 3, 4, 5, 6]
    .flatMap((Operation): Case[] => [
      { args: { Operation }, inputs: [dem, s16] },
      { args: { Operation }, inputs: [bands, constant([2])] },
    ])
    .concat(
      ((): Case[] => {
        // Across grids (Align nodes): another UTM grid (bilinear / nearest), and geographic <-> UTM.
        const utm = rasterOf({ width: 40, height: 30, cellSize: 45, origin: { x: 310, y: -220 } }, surface, holes.subarray(0, 1200));
        const utmS16 = rasterOf(
          { width: 50, height: 40, cellSize: 37, origin: { x: -95, y: 64 }, pixelType: 'S16' },
          (x, y) => x * 11 - y * 13,
        );
        const utmFar = rasterOf({ width: W, height: H, cellSize: 30, origin: { x: 500000, y: 4000000 } }, surface, holes);
        const geoNear = rasterOf(
          { width: 40, height: 30, cellSize: 1 / 1200, geographic: true, origin: { x: -87.01, y: 36.15 } },
          surface,
          holes.subarray(0, 1200),
        );
        return [
          { args: { ExtentType: 2, CellsizeType: 1 }, inputs: [dem, utm] },
          { args: { ExtentType: 1, CellsizeType: 3, Operation: 3 }, inputs: [bands, utmS16] },
          { args: { ExtentType: 3, CellsizeType: 4, Operation: 2 }, inputs: [dem, utmS16] },
          { args: { Operation: 2 }, inputs: [utmFar, geoNear] },
          { args: { Operation: 2, ExtentType: 2, CellsizeType: 1 }, inputs: [geoNear, utmFar] },
        ];
      })(),
    ),
  Resample: [
    ...[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((ResamplingType) => ({ args: { ResamplingType, OutputCellsize: 75 }, inputs: [dem] })),
    ...[0, 1, 2, 3, 4, 7, 8, 9].map((ResamplingType) => ({ args: { ResamplingType, OutputCellsize: { x: 12, y: 17 } }, inputs: [dem] })),
    ...[5, 6].map((ResamplingType) => ({ args: { ResamplingType, OutputCellsize: { x: 130, y: 70 } }, inputs: [bands] })),
    { args: { ResamplingType: 7, InputCellsize: 20, OutputCellsize: 50 }, inputs: [s16] },
    {
      args: { ResamplingType: 10, OutputCellsize: 70 },
      inputs: [
        rasterOf(
          { width: W, height: H, cellSize: 30, bandCount: 2 },
          (x, y, b) => (b === 0 ? 1 + ((x * y) % 9) : (x * 37 + y * 11) % 360),
          holes,
        ),
      ],
    },
    {
      args: { ResamplingType: 10, OutputCellsize: 41, InputDataType: 'Vector-UV' },
      inputs: [rasterOf({ width: W, height: H, cellSize: 30, bandCount: 2 }, (x, y, b) => (b === 0 ? x - 30 : 20 - y), holes)],
    },
  ],
  Geometric: [
    { order: 1, append: false, ResamplingType: 1 },
    { order: 2, append: true, ResamplingType: 2 },
    { order: 3, append: false, ResamplingType: 0 },
  ].map(({ order, append, ResamplingType }) => {
    const src = [
      [0, 0],
      [61, 0],
      [0, 47],
      [61, 47],
      [30, 20],
      [10, 35],
      [50, 12],
      [20, 5],
      [45, 40],
      [5, 20],
      [33, 44],
      [58, 30],
    ];
    const sourcePoints = src.map(([x, y]) => (append ? { x: x! * 30, y: -y! * 30 } : { x, y }));
    const targetPoints = src.map(([x, y]) => ({
      x: 1000 + 25 * x! + 4 * y! + (order > 1 ? 0.05 * x! * y! : 0),
      y: 5000 + 3 * x! - 27 * y! + (order > 2 ? 0.002 * y! ** 3 : 0),
    }));
    return {
      args: {
        AppendGeodataXform: append,
        ResamplingType,
        GeodataTransforms: [
          { geodataTransform: 'Polynomial', geodataTransformArguments: { sourcePoints, targetPoints, polynomialOrder: order } },
        ],
      },
      inputs: [dem],
    };
  }),
  // Change/trend family: a 30-date, 2-band multidimensional series (a step at date 15 in the east,
  // gaps as NaN slices, the usual holes), trend rasters made from it, class and multiband pairs.
  ...((): Record<string, readonly Case[]> => {
    const DAY = 86400000;
    const times = Array.from({ length: 30 }, (_, k) => Date.UTC(2000, 0, 5) + k * 36 * DAY);
    const md = {
      variables: [
        {
          name: 'S',
          dimensions: [{ name: 'StdTime', time: true }],
          bandsPerSlice: 2,
          slices: times.map((t, k) => ({ values: [t], band: 2 * k })),
        },
      ],
    };
    const series = rasterOf(
      { width: W, height: H, cellSize: 30, bandCount: 60, extra: { multidimensional: md } },
      (x, y, b) => {
        const k = b >> 1;
        if ((x + y + k) % 17 === 0) return Number.NaN;
        const w = (2 * Math.PI * times[k]!) / DAY / 365.25;
        return (
          50 +
          (b & 1 ? 12 * Math.cos(w) : 8 * Math.sin(w)) +
          0.3 * x +
          ((x * 7919 + y * 104729 + k * 31) % 7) +
          (k >= 15 && x > 30 ? (b & 1 ? -40 : 35) : 0)
        );
      },
      holes,
    );
    const linear = byName('TrendAnalysis', {}, [series]);
    const harmonic = byName('TrendAnalysis', { RegressionType: 1, Frequency: 2 }, [series]);
    const model = byName('CCDC', { TmaskBandIDs: [0, 1] }, [series]);
    const classes = (seed: number) =>
      rasterOf({ width: W, height: H, cellSize: 30, pixelType: 'U8' }, (x, y) => 1 + ((x * seed + y * 3) % 4), holes);
    const bands2 = rasterOf(
      { width: W, height: H, cellSize: 30, bandCount: 3, pixelType: 'U8' },
      (x, y, b) => (x * 5 + y * 2 + b * 60) % 256,
      holes,
    );
    return {
      TrendAnalysis: [
        { args: {}, inputs: [series] },
        { args: { RegressionType: 1, Frequency: 2, R2: true, SlopePValue: true }, inputs: [series] },
        { args: { RegressionType: 2, Order: 3, IgnoreNoData: false }, inputs: [series] },
        { args: { RegressionType: 3 }, inputs: [series] },
        { args: { RegressionType: 3, IgnoreNoData: false }, inputs: [series] },
        { args: { RegressionType: 4, SeasonalPeriod: 'MONTHS' }, inputs: [series] },
      ],
      Trend: [
        { args: { DimensionValues: '2005-01-01;2010-06-30' }, inputs: [linear] },
        {
          args: {
            DimensionDefinitionType: 1,
            DimensionStart: '2003-01-01',
            DimensionEnd: '2004-01-01',
            DimensionInterval: 3,
            DimensionUnit: 'MONTHS',
          },
          inputs: [harmonic],
        },
      ],
      TrendToRGB: [
        { args: {}, inputs: [linear] },
        { args: { ModelType: 1 }, inputs: [harmonic] },
        { args: {}, inputs: [byName('TrendAnalysis', { RegressionType: 4, SeasonalPeriod: 'MONTHS' }, [series])] },
      ],
      CCDC: [
        { args: { TmaskBandIDs: [0, 1] }, inputs: [series] },
        { args: { BandIDs: [1], MinNumberAnomaly: 4, UpdatingFrequency: 0.5 }, inputs: [series] },
      ],
      DetectChange: [0, 1, 2, 3].map((ChangeType) => ({ args: { ChangeType, MaxNumberChanges: 2 }, inputs: [model] })),
      ComputeChange: [
        ...[0, 1].map((Method) => ({ args: { Method, Raster2: '$2' }, inputs: [dem, s16] })),
        ...[3, 4, 5].map((Method) => ({ args: { Method, Raster2: '$2' }, inputs: [bands, bands2] })),
        {
          args: { Method: 2, Raster2: '$2', FromClassValues: [1, 2, 3, 4], ToClassValues: [4, 3, 2, 1] },
          inputs: [classes(7), classes(5)],
        },
        { args: { Method: 2, Raster2: '$2', KeepMethod: 0 }, inputs: [classes(7), classes(5)] },
      ],
    };
  })(),
};

describe('tiled rendering equals whole rendering', () => {
  it('every registered function has a tiling case', () => {
    expect(builtinFunctions.map((f) => f.name).filter((n) => !(n in CASES))).toEqual([]);
  });

  for (const fn of builtinFunctions) {
    for (const [i, c] of (CASES[fn.name] ?? []).entries()) {
      it(`${fn.name} #${i} ${JSON.stringify(c.args)}`, async () => {
        const node = applyFunction(fn, c.args, c.inputs);
        for (const tile of [
          [37, 53],
          [7, 5],
          [1, 3],
          [16, 16],
        ] as [number, number][]) {
          expect(await tiledVersusWhole(node, tile), `tile ${tile.join('x')}`).toBeUndefined();
        }
      });
    }
  }
});

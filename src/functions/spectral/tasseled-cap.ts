/**
 * TasseledCap — brightness, greenness and wetness (MSS: yellow stuff) from a multispectral image,
 * with the published coefficients of the image's sensor.
 *
 * Spec: raster-functions.md §2 "TasseledCap" (coefficient tables); spec section 8 ("Raster opt
 * only. All else is derived from the input's bands, data type and sensor name ... No function that
 * alters pixel values may precede it").
 * Sensor: `RasterInfo.sensorName` (GeoTIFF GDAL metadata SENSOR_NAME / SensorName), or the
 * optional `SensorName` argument [ours: an extension for sources without that metadata; it wins
 * over the metadata, with a warning when they differ]. Names are matched loosely (case, spaces,
 * punctuation ignored): Landsat MSS (also "Landsat 1/2/3"), Landsat TM ("Landsat 4/5"), Landsat
 * ETM+ ("Landsat 7"), Landsat 8/9 OLI, IKONOS, QuickBird (QB02), WorldView-2 (WV02), RapidEye,
 * Sentinel-2 (MSI). An unknown or missing sensor is an error listing the supported ones.
 * Bands: chosen by the raster's band count (table `layouts` below), e.g. ETM+ with 6 bands =
 * 1,2,3,4,5,7; with 8 bands (1-8, one thermal) = 1,2,3,4,5,7; with 9 (6_1, 6_2) = 1,2,3,4,5,7;
 * OLI with 6 bands = 2-7, with 7/8/9/11 bands (from band 1) = 2-7; Sentinel-2 with 13 bands in
 * the product order B1..B8, B8A, B9..B12, or 12 without B10 (its tiny coefficients dropped).
 * Coefficients [LIT, as listed in the spec]: MSS Kauth & Thomas 1976; TM Crist & Cicone 1984 (set
 * A) for integer (DN) input and Crist 1985 (set B) for float (reflectance) input, as the spec
 * recommends (the Crist et al. 1986 Landsat-5 set with offsets is not used); ETM+ Huang et al.
 * 2002; OLI Baig et al. 2014; IKONOS Horne 2003 (the spec marks these "from memory, unsure");
 * QuickBird Yarbrough et al. 2005 (band-4 column unsure in the spec); WorldView-2 Yarbrough et al.
 * 2014; RapidEye Schönert et al. 2014; Sentinel-2 Nedkov 2017. Each output = Σ c_b · band_b, no
 * offsets, in float64.
 * Preceding functions: the input must carry `RasterInfo.radiometry` (set by sources, kept only by
 * functions that pass values through unchanged: ExtractBand, CompositeBand, Identity, Clip, Mask,
 * a widening cast); anything that altered values (Stretch, Pansharpening, Arithmetic, a narrowing
 * outputPixelType, ...) drops it and is refused (UNSUPPORTED_INPUT). ETM+ coefficients are for
 * at-sensor reflectance: the vendor requires Apparent Reflectance first; rasterflow has no such
 * function yet, so DN input is accepted with a warning (radiometry 'source') [ours].
 * 8-bit IKONOS, QuickBird and WorldView-2 input (preprocessed products) is refused, as the vendor.
 * Output: 3 bands F32 (Brightness, Greenness, Wetness / YellowStuff), NoData NaN; NoData where the
 * input is NoData or a result is not finite.
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, isInteger } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { linearBands } from './spectral-conversion.js';

interface Sensor {
  readonly label: string;
  readonly match: (key: string) => boolean;
  /** Coefficient rows (3 components) over the sensor's bands in coefficient order. */
  readonly rows: readonly (readonly number[])[];
  /** Float-input rows, when they differ (TM). */
  readonly floatRows?: readonly (readonly number[])[];
  readonly components: readonly string[];
  /** Band count -> input band of each coefficient column (-1: band absent, column dropped). */
  readonly layouts: Readonly<Record<number, readonly number[]>>;
  /** Refuse 8-bit input (preprocessed products). */
  readonly no8bit?: boolean;
}

const BGW = ['Brightness', 'Greenness', 'Wetness'] as const;
const seq = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

const SENSORS: readonly Sensor[] = [
  {
    label: 'Landsat MSS',
    match: (k) => k.includes('mss') || /^landsat[123]$/.test(k),
    rows: [
      [0.433, 0.632, 0.586, 0.264],
      [-0.29, -0.562, 0.6, 0.491],
      [-0.829, 0.522, -0.039, 0.194],
    ],
    components: ['Brightness', 'Greenness', 'YellowStuff'],
    layouts: { 4: seq(0, 4) },
  },
  {
    label: 'Landsat ETM+',
    match: (k) => k.includes('etm') || /^landsat0?7$/.test(k) || k === 'le7' || k === 'le07',
    rows: [
      [0.3561, 0.3972, 0.3904, 0.6966, 0.2286, 0.1596],
      [-0.3344, -0.3544, -0.4556, 0.6966, -0.0242, -0.263],
      [0.2626, 0.2141, 0.0926, 0.0656, -0.7629, -0.5388],
    ],
    components: BGW,
    layouts: { 6: seq(0, 6), 8: [0, 1, 2, 3, 4, 6], 9: [0, 1, 2, 3, 4, 7] },
  },
  {
    label: 'Landsat TM',
    match: (k) => /^landsat\d*tm$/.test(k) || k === 'tm' || /^landsat0?[45]$/.test(k) || k === 'thematicmapper',
    rows: [
      [0.3037, 0.2793, 0.4743, 0.5585, 0.5082, 0.1863],
      [-0.2848, -0.2435, -0.5436, 0.7243, 0.084, -0.18],
      [0.1509, 0.1973, 0.3279, 0.3406, -0.7112, -0.4572],
    ],
    floatRows: [
      [0.2043, 0.4158, 0.5524, 0.5741, 0.3124, 0.2303],
      [-0.1603, -0.2819, -0.4934, 0.794, -0.0002, -0.1446],
      [0.0315, 0.2021, 0.3102, 0.1594, -0.6806, -0.6109],
    ],
    components: BGW,
    layouts: { 6: seq(0, 6), 7: [0, 1, 2, 3, 4, 6] },
  },
  {
    label: 'Landsat 8 OLI',
    match: (k) => k.includes('oli') || /^landsat0?[89]$/.test(k),
    rows: [
      [0.3029, 0.2786, 0.4733, 0.5599, 0.508, 0.1872],
      [-0.2941, -0.243, -0.5424, 0.7276, 0.0713, -0.1608],
      [0.1511, 0.1973, 0.3283, 0.3407, -0.7117, -0.4559],
    ],
    components: BGW,
    layouts: { 6: seq(0, 6), 7: seq(1, 6), 8: seq(1, 6), 9: seq(1, 6), 11: seq(1, 6) },
  },
  {
    label: 'IKONOS',
    match: (k) => k.includes('ikonos'),
    rows: [
      [0.326, 0.509, 0.56, 0.567],
      [-0.311, -0.356, -0.325, 0.819],
      [-0.612, -0.312, 0.722, -0.081],
    ],
    components: BGW,
    layouts: { 4: seq(0, 4) },
    no8bit: true,
  },
  {
    label: 'QuickBird',
    match: (k) => k.includes('quickbird') || k === 'qb02' || k === 'qb2',
    rows: [
      [0.319, 0.542, 0.49, 0.604],
      [-0.121, -0.331, -0.517, 0.78],
      [0.652, 0.375, -0.639, -0.163],
    ],
    components: BGW,
    layouts: { 4: seq(0, 4) },
    no8bit: true,
  },
  {
    label: 'WorldView-2',
    match: (k) => k.includes('worldview2') || k === 'wv02' || k === 'wv2',
    rows: [
      [-0.060436, 0.012147, 0.125846, 0.313039, 0.412175, 0.482758, -0.160654, 0.67351],
      [-0.14011, -0.206224, -0.215854, -0.314441, -0.410892, 0.095786, 0.600549, 0.503672],
      [-0.270951, -0.31708, -0.317263, -0.242544, -0.256463, -0.09655, -0.742535, 0.20243],
    ],
    components: BGW,
    layouts: { 8: seq(0, 8) },
    no8bit: true,
  },
  {
    label: 'RapidEye',
    match: (k) => k.includes('rapideye'),
    rows: [
      [0.2435, 0.3448, 0.4881, 0.493, 0.5835],
      [-0.2216, -0.2319, -0.4622, -0.2154, 0.7981],
      [-0.7564, -0.3916, 0.5049, 0.14, 0.0064],
    ],
    components: BGW,
    layouts: { 5: seq(0, 5) },
  },
  {
    label: 'Sentinel-2',
    match: (k) => k.includes('sentinel2') || k === 's2a' || k === 's2b' || k === 'msi' || k.includes('sentinel2msi'),
    // Coefficient order B1, B2, ..., B12, B8A (Nedkov 2017).
    rows: [
      [0.0356, 0.0822, 0.136, 0.2611, 0.2964, 0.3338, 0.3877, 0.3895, 0.0949, 0.0009, 0.3882, 0.1366, 0.475],
      [-0.0635, -0.1128, -0.168, -0.348, -0.3303, 0.0852, 0.3302, 0.3165, 0.0467, -0.0009, -0.4578, -0.4064, 0.3625],
      [0.0649, 0.1363, 0.2802, 0.3072, 0.5288, 0.1379, -0.0001, -0.0807, -0.0302, 0.0003, -0.4064, -0.5602, -0.1389],
    ],
    components: BGW,
    // Product order B1..B8, B8A, B9, (B10,) B11, B12.
    layouts: { 13: [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 8], 12: [0, 1, 2, 3, 4, 5, 6, 7, 9, -1, 10, 11, 8] },
  },
];

/** Lower-case letters and digits only: "Landsat 7 ETM+" -> "landsat7etm". */
const keyOf = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]/g, '');

export function sensorOf(name: string): Sensor | undefined {
  const k = keyOf(name);
  return SENSORS.find((s) => s.match(k));
}

const args = {
  Raster: { kind: 'raster', default: '$$', doc: 'Input multispectral raster; defaults to the service raster ($$).' },
  SensorName: {
    kind: 'string',
    aliases: ['Sensor'],
    doc: 'Extension: the sensor (e.g. "Landsat 7 ETM+") when the raster carries no sensor-name metadata; overrides it.',
  },
} as const satisfies ArgSchema;

interface TasseledCapParams {
  readonly input: number;
  readonly bands: readonly number[];
  readonly matrix: readonly number[];
}

const at = argPaths(args);

export const tasseledCap = defineFunction<typeof args, TasseledCapParams>({
  name: 'TasseledCap',
  summary: 'Brightness, greenness and wetness (tasseled cap) with the published coefficients of the raster’s sensor.',
  variableName: 'Raster',
  family: 'spectral',
  verification: 'reference: NumPy golden with Huang et al. 2002 ETM+ coefficients on L7_ETMs.tif; hand: sensors, layouts, refusals',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    const warnings: string[] = [];
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `TasseledCap does not take complex (${src.pixelType}) rasters`);
    const name = a.SensorName?.trim() || src.sensorName;
    if (a.SensorName?.trim() && src.sensorName && sensorOf(src.sensorName) !== sensorOf(a.SensorName)) {
      warnings.push(`SensorName "${a.SensorName}" overrides the raster's sensor "${src.sensorName}"`);
    }
    const supported = SENSORS.map((s) => s.label).join(', ');
    if (!name) {
      throw unsupportedInput(
        at('Raster'),
        `TasseledCap needs the raster's sensor name (metadata SENSOR_NAME, or the SensorName argument); supported: ${supported}`,
      );
    }
    const sensor = sensorOf(name);
    if (sensor === undefined) {
      throw unsupportedInput(
        a.SensorName?.trim() ? at('SensorName') : at('Raster'),
        `sensor "${name}" has no tasseled cap coefficients; supported: ${supported}`,
      );
    }
    if (src.radiometry === undefined) {
      throw unsupportedInput(
        at('Raster'),
        'TasseledCap needs the sensor’s own pixel values, but a function that alters pixel values (Stretch, Pansharpening, Arithmetic, a narrowing outputPixelType, ...) precedes it',
      );
    }
    if (sensor.no8bit && src.pixelType === 'U8') {
      throw unsupportedInput(
        at('Raster'),
        `8-bit ${sensor.label} products are preprocessed and not valid TasseledCap input; use the original (11-bit) data`,
      );
    }
    if (sensor.label === 'Landsat ETM+' && src.radiometry !== 'apparentReflectance') {
      warnings.push(
        'Landsat ETM+ coefficients (Huang et al. 2002) are for at-sensor reflectance; this input has not been through an apparent-reflectance step',
      );
    }
    const layout = sensor.layouts[src.bandCount];
    if (layout === undefined) {
      throw unsupportedInput(
        at('Raster'),
        `${sensor.label} TasseledCap needs one of these band counts: ${Object.keys(sensor.layouts).join(', ')}; the raster has ${src.bandCount}`,
      );
    }
    const rows = !isInteger(src.pixelType) && sensor.floatRows ? sensor.floatRows : sensor.rows;
    const cols = layout.map((b, j) => [b, j] as const).filter(([b]) => b >= 0);
    const bands = cols.map(([b]) => b);
    const matrix = rows.flatMap((r) => cols.map(([, j]) => r[j]!));
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: 3,
      pixelType: floatOutputType(to, 'F32'),
      noData: Number.NaN,
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      bandNames: [...sensor.components],
    };
    if (bands.length === 0) throw invalidArgument(at('Raster'), 'no bands selected');
    return { info, halo: 0, params: { input: a.Raster, bands, matrix }, ...(warnings.length ? { warnings } : {}) };
  },

  kernel(p, inputs, out) {
    linearBands(inputs[p.input]!, p.bands, p.matrix, undefined, out);
  },
});

/**
 * UnitConversion — convert pixel values between distance, speed or temperature units.
 *
 * Spec: raster-functions.md §2 "UnitConversion" (variableName `Raster`) and the spec table's unit
 * codes: distance 1 Inches, 2 Points, 3 Feet, 4 Yards, 5 Miles, 6 NauticalMiles, 7 Millimeters,
 * 8 Centimeters, 9 Meters, 10 Kilometers, 11 DecimalDegrees, 12 Decimeters; speed 100 m/s,
 * 101 km/h, 102 knots, 103 ft/s, 104 mph; temperature 200 Celsius, 201 Fahrenheit, 202 Kelvin.
 * Math, in float64 per pixel and band: distance and speed `out = in × (f(from) / f(to))`, with
 * f the unit's size in metres (m/s). Factors are the exact SI definitions (NIST SP 811 appendix
 * B: 1 in = 0.0254 m, 1 ft = 0.3048 m, 1 yd = 0.9144 m, 1 mi = 1609.344 m, 1 nmi = 1852 m,
 * 1 point = 1/72 in), km/h = 1/3.6 m/s, knot = 1852/3600 m/s, ft/s = 0.3048, mph = 0.44704.
 * ASSUMPTION (spec: vendor constant undocumented, "unsure"): a decimal degree is
 * 111319.490793 m (WGS 84 equatorial circumference / 360), as the spec table recommends: a pixel
 * value has no latitude, so the engine's one geodesy (core/geodesy.ts) gives the equatorial degree.
 * ASSUMPTION (spec lists the vendor client's rounded 0.277778 / 0.514444): the exact speed factors
 * are used; they differ from the rounded ones by under 1e-6 relative.
 * Temperature through Celsius: C = F→(F − 32)·5/9, K→K − 273.15; then C→F = C·9/5 + 32,
 * C→K = C + 273.15. From = To is the identity (the values are still cast to F32).
 * Output: F32 (natural type, spec [ours]), NoData NaN, same band count; grid, spatial reference
 * and band names of the input. Statistics are scaled for distance/speed (a linear map), shifted
 * and scaled for temperature (also linear, increasing), so a following Stretch keeps working.
 * Edges and NoData: the input mask passes through; results outside the F32 range become NoData.
 * Errors: a code outside the table is INVALID_ARGUMENT at that argument; FromUnit and ToUnit of
 * different categories (e.g. speed to distance) is INVALID_ARGUMENT at ToUnit.
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import { METERS_PER_EQUATORIAL_DEGREE } from '../../core/geodesy.js';
import type { BandStatistics, RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';

type Category = 'distance' | 'speed' | 'temperature';

interface Unit {
  readonly name: string;
  readonly category: Category;
  /** Size in the category's base unit (metre, metre per second); unused for temperature. */
  readonly factor: number;
}

/** The unit table: code -> name, category, size in base units. */
export const UNITS: Readonly<Record<number, Unit>> = {
  1: { name: 'Inches', category: 'distance', factor: 0.0254 },
  2: { name: 'Points', category: 'distance', factor: 0.0254 / 72 },
  3: { name: 'Feet', category: 'distance', factor: 0.3048 },
  4: { name: 'Yards', category: 'distance', factor: 0.9144 },
  5: { name: 'Miles', category: 'distance', factor: 1609.344 },
  6: { name: 'NauticalMiles', category: 'distance', factor: 1852 },
  7: { name: 'Millimeters', category: 'distance', factor: 0.001 },
  8: { name: 'Centimeters', category: 'distance', factor: 0.01 },
  9: { name: 'Meters', category: 'distance', factor: 1 },
  10: { name: 'Kilometers', category: 'distance', factor: 1000 },
  11: { name: 'DecimalDegrees', category: 'distance', factor: METERS_PER_EQUATORIAL_DEGREE },
  12: { name: 'Decimeters', category: 'distance', factor: 0.1 },
  100: { name: 'MetersPerSecond', category: 'speed', factor: 1 },
  101: { name: 'KilometersPerHour', category: 'speed', factor: 1 / 3.6 },
  102: { name: 'Knots', category: 'speed', factor: 1852 / 3600 },
  103: { name: 'FeetPerSecond', category: 'speed', factor: 0.3048 },
  104: { name: 'MilesPerHour', category: 'speed', factor: 0.44704 },
  200: { name: 'Celsius', category: 'temperature', factor: 1 },
  201: { name: 'Fahrenheit', category: 'temperature', factor: 1 },
  202: { name: 'Kelvin', category: 'temperature', factor: 1 },
};

const CODES = Object.keys(UNITS).map(Number);
/** Names accepted instead of codes: `Feet`, `geoFeet`, ... (case-insensitive). */
const NAMES: Record<string, number> = Object.fromEntries(
  CODES.flatMap((c) => [[UNITS[c]!.name, c] as const, [`geo${UNITS[c]!.name}`, c] as const]),
);

const unitDoc = (which: string): string =>
  `${which} unit code: distance 1 Inches, 2 Points, 3 Feet, 4 Yards, 5 Miles, 6 NauticalMiles, 7 Millimeters, ` +
  '8 Centimeters, 9 Meters, 10 Kilometers, 11 DecimalDegrees, 12 Decimeters; speed 100 m/s, 101 km/h, 102 knots, ' +
  '103 ft/s, 104 mph; temperature 200 Celsius, 201 Fahrenheit, 202 Kelvin (names such as Feet or geoFeet also accepted).';

const args = {
  FromUnit: { kind: 'enum', values: CODES, names: NAMES, doc: unitDoc('Input') },
  ToUnit: { kind: 'enum', values: CODES, names: NAMES, doc: unitDoc('Output') },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

interface UnitConversionParams {
  readonly input: number;
  /** out = in × scale + offset (every conversion in the table is linear). */
  readonly scale: number;
  readonly offset: number;
}

const at = argPaths(args);

/** The linear map `out = in × scale + offset` from unit `from` to unit `to` (same category). */
export function conversion(from: number, to: number): { scale: number; offset: number } {
  const f = UNITS[from]!;
  const t = UNITS[to]!;
  if (from === to) return { scale: 1, offset: 0 };
  if (f.category !== 'temperature') return { scale: f.factor / t.factor, offset: 0 };
  // Temperature: to Celsius (c = in × a + b), then from Celsius (out = c × s + o).
  const [a, b] = from === 201 ? [5 / 9, (-32 * 5) / 9] : from === 202 ? [1, -273.15] : [1, 0];
  const [s, o] = to === 201 ? [9 / 5, 32] : to === 202 ? [1, 273.15] : [1, 0];
  return { scale: a * s, offset: b * s + o };
}

export const unitConversion = defineFunction<typeof args, UnitConversionParams>({
  name: 'UnitConversion',
  summary: 'Convert values between distance, speed or temperature units (F32 output).',
  variableName: 'Raster',
  family: 'local',
  verification: 'reference: gdal_calc.py (NumPy) goldens with the NIST factors; hand: every code against the published factors',
  args,

  plan(a, inputs, outputType) {
    const src = inputs[a.Raster]!;
    if (a.FromUnit === undefined) throw invalidArgument(at('FromUnit'), 'FromUnit is required');
    if (a.ToUnit === undefined) throw invalidArgument(at('ToUnit'), 'ToUnit is required');
    if (isComplex(src.pixelType)) {
      throw unsupportedInput(at('Raster'), `UnitConversion does not take complex (${src.pixelType}) rasters; use Complex first`);
    }
    const from = UNITS[a.FromUnit]!;
    const to = UNITS[a.ToUnit]!;
    if (from.category !== to.category) {
      throw invalidArgument(
        at('ToUnit'),
        `cannot convert ${from.category} (${from.name}, ${a.FromUnit}) to ${to.category} (${to.name}, ${a.ToUnit}); ` +
          `ToUnit must be a ${from.category} unit (${CODES.filter((c) => UNITS[c]!.category === from.category).join(', ')})`,
      );
    }
    const { scale, offset } = conversion(a.FromUnit, a.ToUnit);
    const map = (s: BandStatistics): BandStatistics => ({
      min: Math.fround(s.min * scale + offset),
      max: Math.fround(s.max * scale + offset),
      ...(s.mean !== undefined ? { mean: s.mean * scale + offset } : {}),
      ...(s.stdDev !== undefined ? { stdDev: s.stdDev * scale } : {}),
      ...(s.count !== undefined ? { count: s.count } : {}),
      ...(s.median !== undefined ? { median: s.median * scale + offset } : {}),
      ...(s.mode !== undefined ? { mode: s.mode * scale + offset } : {}),
    });
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: src.bandCount,
      pixelType: floatOutputType(outputType, 'F32'),
      noData: Number.NaN,
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
      ...(src.bandNames ? { bandNames: src.bandNames } : {}),
      // scale > 0 for every pair, so min stays min.
      ...(src.statistics ? { statistics: src.statistics.map(map) } : {}),
    };
    return { info, halo: 0, params: { input: a.Raster, scale, offset } };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const mask = out.mask;
    mask.set(src.mask);
    const n = mask.length;
    const { scale, offset } = p;
    for (let b = 0; b < out.bands.length; b++) {
      const s = src.bands[b]!;
      const d = out.bands[b]!;
      for (let i = 0; i < n; i++) {
        d[i] = s[i]! * scale + offset;
        const v = d[i]!;
        if (v - v !== 0) mask[i] = 0; // NaN input, or beyond the F32 range
      }
    }
  },
});

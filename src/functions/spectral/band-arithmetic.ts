/**
 * BandArithmetic — spectral indexes (NDVI, SAVI, TSAVI, MSAVI, GEMI, PVI, GVITM, Sultan, VARI and
 * the later methods 10-29) or a user-defined formula over the bands of one raster.
 *
 * Spec: raster-functions.md §2 "BandArithmetic" (method table, constants, defaults, CONFLICT boxes)
 * and 000 spec §8 (BandIndexes table). `BandIndexes` is a space-separated string: 1-based band
 * numbers in the order the method's table gives, then the method's constants; or, for Method 0
 * (UserDefined), an expression with `+ - * /`, unary minus, parentheses, numbers and band
 * references `B<n>`/`b<n>` (1-based; several digits allowed, unlike the vendor client). The
 * expression is parsed by the shared expression engine (src/functions/expr, `arithmetic` dialect:
 * nothing else is allowed, nothing is evaluated as JavaScript), so are our own formulas for the
 * fixed methods (written once below, in the engine's full grammar).
 *
 * Defaults: when BandIndexes is absent or empty, methods with a documented default use it (the
 * bracketed values in the spec table: NDVI "4 3", SAVI "4 3 0.33", TSAVI "4 3 0.33 0.50 1.50",
 * MSAVI/GEMI "4 3", PVI "4 3 0.3 0.5", GVITM/Sultan "1 2 3 4 5 6", VARI "3 2 1", NDWI "5 3",
 * EVI "5 4 2", WNDWI "2 5 6 0.5", BAI "3 4", NDBI "6 5"); the others need BandIndexes. Missing
 * trailing constants take their defaults; extra numbers are ignored with a warning.
 * ASSUMPTION (spec lists band orders only for some later methods): MTVI2 "NIR Red Green", RTVICore
 * "NIR RedEdge Green", CIre/NDVIre/SRre "NIR RedEdge", GNDVI/CIg "NIR Green", SR "NIR Red",
 * IronOxide "Red Blue", FerrousMinerals "SWIR NIR", ClayMinerals "SWIR1 SWIR2", NBR/NDMI "NIR SWIR",
 * NDSI/MNDWI "Green SWIR" (the order of the names in each formula).
 *
 * Math in float64 from the input values (integer inputs promoted before any arithmetic).
 * Division by zero (spec CONFLICT, decision: as the vendor client): a pixel whose denominator is 0
 * is 0, not NoData; in UserDefined expressions each `x / 0` is 0. GEMI: 0 where Red = 1 or the eta
 * denominator is 0; CIre/CIg: 0 where the denominator is 0 (the whole index, as the client).
 * GVITM uses the vendor's band-7 weight -1.18 (spec CONFLICT; the published Kauth-Thomas value is
 * -0.18). MTVI2 follows the published formula (sqrt((2NIR+1)^2 - (6NIR - 5 sqrt(Red)) - 0.5)).
 * Domain errors (MSAVI/MTVI2 square roots of negatives) and non-finite results are NoData.
 * Output: natural type F32, NoData NaN, 1 band; Sultan 3 bands.
 * ASSUMPTION (000 spec §8 calls Sultan "a 3-band 8-bit image", raster-functions.md: "VJS creates
 * F32 for all methods"): F32 for Sultan too, as the task and the vendor client; outputPixelType U8
 * gives the 8-bit form.
 * NoData: a pixel is NoData where any band the method reads is NoData (masks ANDed).
 * outputPixelType: computed in floating point; a float type is computed into directly (F64 holds
 * the float64 result, not rounded to F32), an integer type is the float result through the engine's
 * cast (round half away from zero, saturate, NaN -> NoData; spec 1.2), a complex type its component
 * type, then that cast.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { floatOutputType } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import type { Binding } from '../expr/compile.js';
import { bindUserExpression, compileProgram, ExprBuilder, type IrNode } from '../expr/index.js';
import { expressionKernel, type ExpressionParams } from '../expr/operands.js';

interface MethodDef {
  readonly name: string;
  /** Band roles, in BandIndexes order. */
  readonly bands: readonly string[];
  /** Constants after the band numbers, with their defaults. */
  readonly constants?: readonly (readonly [string, number])[];
  /** Documented default BandIndexes. */
  readonly defaults?: string;
  /** Our formulas (engine grammar; `/` by zero is 0). `let` sub-expressions are bound by name first. */
  readonly formulas: readonly string[];
  readonly let?: readonly (readonly [string, string])[];
}

const ND = (a: string, b: string): string => `(${a} - ${b}) / (${a} + ${b})`;

export const METHODS: Readonly<Record<number, MethodDef>> = {
  1: { name: 'NDVI', bands: ['NIR', 'Red'], defaults: '4 3', formulas: [ND('NIR', 'Red')] },
  2: {
    name: 'SAVI',
    bands: ['NIR', 'Red'],
    constants: [['L', 0.33]],
    defaults: '4 3 0.33',
    formulas: ['(NIR - Red) / (NIR + Red + L) * (1 + L)'],
  },
  3: {
    name: 'TSAVI',
    bands: ['NIR', 'Red'],
    constants: [
      ['s', 0.33],
      ['a', 0.5],
      ['X', 1.5],
    ],
    defaults: '4 3 0.33 0.50 1.50',
    formulas: ['s * (NIR - s * Red - a) / (a * NIR + Red - a * s + X * (1 + s * s))'],
  },
  4: {
    name: 'MSAVI',
    bands: ['NIR', 'Red'],
    defaults: '4 3',
    formulas: ['0.5 * (2 * (NIR + 1) - Sqrt((2 * NIR + 1) ** 2 - 8 * (NIR - Red)))'],
  },
  5: {
    name: 'GEMI',
    bands: ['NIR', 'Red'],
    defaults: '4 3',
    let: [['eta', '(2 * (NIR * NIR - Red * Red) + 1.5 * NIR + 0.5 * Red) / (NIR + Red + 0.5)']],
    formulas: ['Con((Red == 1) | (NIR + Red + 0.5 == 0), 0, eta * (1 - 0.25 * eta) - (Red - 0.125) / (1 - Red))'],
  },
  6: {
    name: 'PVI',
    bands: ['NIR', 'Red'],
    constants: [
      ['a', 0.3],
      ['b', 0.5],
    ],
    defaults: '4 3 0.3 0.5',
    formulas: ['(NIR - a * Red - b) / Sqrt(1 + a * a)'],
  },
  7: {
    name: 'GVITM',
    bands: ['B1', 'B2', 'B3', 'B4', 'B5', 'B7'],
    defaults: '1 2 3 4 5 6',
    formulas: ['-0.2848 * B1 - 0.2435 * B2 - 0.5436 * B3 + 0.7243 * B4 + 0.0840 * B5 - 1.18 * B7'],
  },
  8: {
    name: 'Sultan',
    bands: ['B1', 'B2', 'B3', 'B4', 'B5', 'B6'],
    defaults: '1 2 3 4 5 6',
    formulas: ['B5 / B6 * 100', 'B5 / B1 * 100', 'B3 / B4 * (B5 / B4) * 100'],
  },
  9: { name: 'VARI', bands: ['Red', 'Green', 'Blue'], defaults: '3 2 1', formulas: ['(Green - Red) / (Green + Red - Blue)'] },
  10: { name: 'GNDVI', bands: ['NIR', 'Green'], formulas: [ND('NIR', 'Green')] },
  11: { name: 'SR', bands: ['NIR', 'Red'], formulas: ['NIR / Red'] },
  12: { name: 'NDVIre', bands: ['NIR', 'RedEdge'], formulas: [ND('NIR', 'RedEdge')] },
  13: { name: 'SRre', bands: ['NIR', 'RedEdge'], formulas: ['NIR / RedEdge'] },
  14: {
    name: 'MTVI2',
    bands: ['NIR', 'Red', 'Green'],
    formulas: ['1.5 * (1.2 * (NIR - Green) - 2.5 * (Red - Green)) / Sqrt((2 * NIR + 1) ** 2 - (6 * NIR - 5 * Sqrt(Red)) - 0.5)'],
  },
  15: { name: 'RTVICore', bands: ['NIR', 'RedEdge', 'Green'], formulas: ['100 * (NIR - RedEdge) - 10 * (NIR - Green)'] },
  16: { name: 'CIre', bands: ['NIR', 'RedEdge'], formulas: ['Con(RedEdge == 0, 0, NIR / RedEdge - 1)'] },
  17: { name: 'CIg', bands: ['NIR', 'Green'], formulas: ['Con(Green == 0, 0, NIR / Green - 1)'] },
  18: { name: 'NDWI', bands: ['NIR', 'Green'], defaults: '5 3', formulas: [ND('Green', 'NIR')] },
  19: { name: 'EVI', bands: ['NIR', 'Red', 'Blue'], defaults: '5 4 2', formulas: ['2.5 * (NIR - Red) / (NIR + 6 * Red - 7.5 * Blue + 1)'] },
  20: { name: 'IronOxide', bands: ['Red', 'Blue'], formulas: ['Red / Blue'] },
  21: { name: 'FerrousMinerals', bands: ['SWIR', 'NIR'], formulas: ['SWIR / NIR'] },
  22: { name: 'ClayMinerals', bands: ['SWIR1', 'SWIR2'], formulas: ['SWIR1 / SWIR2'] },
  23: {
    name: 'WNDWI',
    bands: ['Green', 'NIR', 'SWIR'],
    constants: [['alpha', 0.5]],
    defaults: '2 5 6 0.5',
    formulas: ['(Green - alpha * NIR - (1 - alpha) * SWIR) / (Green + alpha * NIR + (1 - alpha) * SWIR)'],
  },
  24: { name: 'BAI', bands: ['Red', 'NIR'], defaults: '3 4', formulas: ['1 / ((0.1 - Red) ** 2 + (0.06 - NIR) ** 2)'] },
  25: { name: 'NBR', bands: ['NIR', 'SWIR'], formulas: [ND('NIR', 'SWIR')] },
  26: { name: 'NDBI', bands: ['SWIR', 'NIR'], defaults: '6 5', formulas: [ND('SWIR', 'NIR')] },
  27: { name: 'NDMI', bands: ['NIR', 'SWIR1'], formulas: [ND('NIR', 'SWIR1')] },
  28: { name: 'NDSI', bands: ['Green', 'SWIR'], formulas: [ND('Green', 'SWIR')] },
  29: { name: 'MNDWI', bands: ['Green', 'SWIR'], formulas: [ND('Green', 'SWIR')] },
};

const METHOD_NAMES: Record<string, number> = { UserDefined: 0 };
for (const [code, m] of Object.entries(METHODS)) METHOD_NAMES[m.name] = Number(code);

const args = {
  Method: {
    kind: 'enum',
    values: Array.from({ length: 30 }, (_, i) => i),
    names: METHOD_NAMES,
    default: 0,
    doc: '0 UserDefined, 1 NDVI, 2 SAVI, 3 TSAVI, 4 MSAVI, 5 GEMI, 6 PVI, 7 GVITM, 8 Sultan, 9 VARI, 10 GNDVI, 11 SR, 12 NDVIre, 13 SRre, 14 MTVI2, 15 RTVICore, 16 CIre, 17 CIg, 18 NDWI, 19 EVI, 20 IronOxide, 21 FerrousMinerals, 22 ClayMinerals, 23 WNDWI, 24 BAI, 25 NBR, 26 NDBI, 27 NDMI, 28 NDSI, 29 MNDWI.',
  },
  BandIndexes: {
    kind: 'json',
    optional: true,
    doc: 'Space-separated 1-based band numbers then constants (e.g. "4 3 0.33" for SAVI), or for Method 0 an expression such as "(B4 - B3)/(B4 + B3)".',
  },
  Raster: { kind: 'raster', default: '$$', doc: 'Input multiband raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

const at = argPaths(args);
const BAND_REF = /^[Bb](\d+)$/;

export const bandArithmetic = defineFunction<typeof args, ExpressionParams>({
  name: 'BandArithmetic',
  summary: 'Spectral indexes (NDVI, SAVI, TSAVI, MSAVI, GEMI, PVI, GVITM, Sultan, VARI, ... MNDWI) or a user formula over bands.',
  variableName: 'Raster',
  family: 'spectral',
  verification:
    'reference: NumPy goldens (NDVI, SAVI, MSAVI, GEMI, PVI, VARI, GVITM, Sultan, UserDefined) on Landsat 7; hand: every method',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `BandArithmetic does not take complex (${src.pixelType}) rasters`);
    const raw = a.BandIndexes;
    let text: string;
    if (raw === undefined) text = '';
    else if (typeof raw === 'string') text = raw;
    else if (typeof raw === 'number') text = String(raw);
    else if (Array.isArray(raw) && raw.every((v) => typeof v === 'number' || typeof v === 'string')) text = raw.join(' ');
    else throw invalidArgument(at('BandIndexes'), 'expected a string (space-separated band numbers and constants, or an expression)');

    const b = new ExprBuilder();
    const slots: { input: number; band: number }[] = [];
    const slotOf = new Map<number, number>();
    const band = (n: number): Binding => {
      let s = slotOf.get(n);
      if (s === undefined) {
        s = slots.push({ input: a.Raster, band: n }) - 1;
        slotOf.set(n, s);
      }
      return { slot: s };
    };
    const warnings: string[] = [];
    let outputs: IrNode[];

    if (a.Method === 0) {
      if (text.trim() === '')
        throw invalidArgument(at('BandIndexes'), 'Method 0 (UserDefined) needs an expression in BandIndexes, e.g. "(B4 - B3)/(B4 + B3)"');
      const refs = (): string[] => Array.from({ length: Math.min(src.bandCount, 20) }, (_, i) => `B${i + 1}`);
      outputs = [
        bindUserExpression(
          text,
          b,
          {
            dialect: 'arithmetic',
            division: 'zero',
            resolve: (name) => {
              const m = BAND_REF.exec(name);
              if (m === null) return undefined;
              const n = Number(m[1]);
              return n >= 1 && n <= src.bandCount ? band(n - 1) : undefined;
            },
            names: refs,
          },
          at('BandIndexes'),
        ),
      ];
    } else {
      const m = METHODS[a.Method]!;
      let given = text.trim();
      if (given === '') {
        if (m.defaults === undefined) {
          throw invalidArgument(
            at('BandIndexes'),
            `${m.name} (Method ${a.Method}) needs BandIndexes: the 1-based band numbers of ${m.bands.join(' ')}`,
          );
        }
        given = m.defaults;
      }
      const tokens = given.split(/[\s,;]+/);
      const numbers = tokens.map(Number);
      const bad = tokens.findIndex((t, i) => t === '' || !Number.isFinite(numbers[i]));
      if (bad >= 0) {
        throw invalidArgument(
          at('BandIndexes'),
          `${JSON.stringify(tokens[bad]!.slice(0, 40))} is not a number; ${m.name} takes "${usage(m)}"`,
        );
      }
      const consts = m.constants ?? [];
      if (numbers.length < m.bands.length) {
        throw invalidArgument(
          at('BandIndexes'),
          `${m.name} (Method ${a.Method}) needs ${m.bands.length} band numbers (${m.bands.join(' ')}), got ${numbers.length}: "${usage(m)}"`,
        );
      }
      if (numbers.length > m.bands.length + consts.length) {
        warnings.push(
          `BandIndexes has ${numbers.length - m.bands.length - consts.length} number(s) more than ${m.name} uses ("${usage(m)}"); they are ignored`,
        );
      }
      const names = new Map<string, Binding>();
      m.bands.forEach((role, i) => {
        const n = numbers[i]!;
        if (!Number.isInteger(n) || n < 1 || n > src.bandCount) {
          throw invalidArgument(
            at('BandIndexes'),
            `${role} band ${n} is not a band of the raster: band numbers are 1-based, 1..${src.bandCount}`,
          );
        }
        names.set(role.toLowerCase(), band(n - 1));
      });
      consts.forEach(([name, value], i) => names.set(name.toLowerCase(), { value: numbers[m.bands.length + i] ?? value }));
      const bind = (formula: string): IrNode =>
        bindUserExpression(
          formula,
          b,
          { dialect: 'full', division: 'zero', resolve: (n) => names.get(n.toLowerCase()), names: () => [...names.keys()] },
          at('BandIndexes'),
        );
      for (const [name, formula] of m.let ?? []) names.set(name, { node: bind(formula) });
      outputs = m.formulas.map(bind);
    }

    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: outputs.length,
      pixelType: floatOutputType(to, 'F32'),
      noData: Number.NaN,
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
    };
    return {
      info,
      halo: 0,
      params: { program: compileProgram(outputs), slots, strictMask: true },
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel: expressionKernel,
});

const usage = (m: MethodDef): string => [...m.bands, ...(m.constants ?? []).map(([n]) => n)].join(' ');

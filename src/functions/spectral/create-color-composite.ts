/**
 * CreateColorComposite — a three-band raster whose red, green and blue bands are each a band or an
 * expression over the bands of one raster, e.g. R = "(NIR - Red)/(NIR + Red)", G = "Green", B = "Blue".
 *
 * Spec: raster-functions.md §2 "CreateColorComposite" (11.0): `Method` 0 band names, 1 band ids;
 * `BandIndexesR`, `BandIndexesG`, `BandIndexesB` each a band name, a band id or an expression;
 * "each evaluated like BandArithmetic UserDefined". So each channel goes through the shared
 * expression engine (src/functions/expr) in BandArithmetic's `arithmetic` dialect: numbers, bands,
 * `+ - * /`, unary minus, parentheses; `x / 0` is 0 (BandArithmetic's rule); never run as JavaScript.
 * - Method 0 (band names): a channel that equals a band name (case-insensitive, surrounding blanks
 *   ignored; names with spaces work this way) is that band; otherwise an expression whose names
 *   are band names (identifiers). A raster without band names cannot use Method 0.
 * - Method 1 (band ids): `B<n>`/`b<n>` is band n, 1-based as in BandArithmetic.
 *   ASSUMPTION (spec: syntax details unsure): a channel that is a bare whole number n means band n
 *   (1-based, the same as `B<n>`); inside an expression a bare number is a constant.
 * Output: 3 bands on the input grid. F32 (NoData NaN) when any channel is an expression; otherwise
 * the input type and NoData value, values copied (spec [ours]). Statistics are not carried over.
 * NoData: a pixel is NoData where any band read by any channel is NoData, or a channel's value is
 * not finite (mask shared by the three bands).
 * outputPixelType: band copies go through the engine's cast (values unchanged where the type holds
 * them); expression channels are computed in floating point (a float type directly, an integer type
 * through the engine's cast: round half away from zero, saturate, NaN -> NoData).
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

const channel = (c: string): { kind: 'string'; doc: string } => ({
  kind: 'string',
  doc: `${c} channel: a band name (Method 0), a band id such as B4 (Method 1), or an expression over bands.`,
});

const args = {
  Method: {
    kind: 'enum',
    values: [0, 1],
    names: { BandNames: 0, Name: 0, Names: 0, BandIDs: 1, Id: 1, Ids: 1 },
    default: 0,
    doc: '0 band names, 1 band ids (B1, B2, ... 1-based).',
  },
  BandIndexesR: channel('Red'),
  BandIndexesG: channel('Green'),
  BandIndexesB: channel('Blue'),
  Raster: { kind: 'raster', default: '$$', doc: 'Input multiband raster; defaults to the service raster ($$).' },
} as const satisfies ArgSchema;

const at = argPaths(args);
const BAND_REF = /^[Bb](\d+)$/;
const WHOLE = /^\d+$/;

export const createColorComposite = defineFunction<typeof args, ExpressionParams>({
  name: 'CreateColorComposite',
  summary: 'Three-band composite whose red, green and blue are each a band or a band expression.',
  variableName: 'Raster',
  family: 'spectral',
  verification: 'reference: NumPy golden (band ids with an NDVI channel) on Landsat 7; hand: names, ids, expressions, errors',
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    if (isComplex(src.pixelType))
      throw unsupportedInput(at('Raster'), `CreateColorComposite does not take complex (${src.pixelType}) rasters`);
    const byName = a.Method === 0;
    const names = (src.bandNames ?? []).map((n) => n.trim().toLowerCase());
    if (byName && names.length === 0) {
      throw unsupportedInput(
        at('Method'),
        'Method 0 (band names) needs a raster with band names; this one has none: use Method 1 with B1, B2, ...',
      );
    }
    const b = new ExprBuilder();
    const slots: { input: number; band: number }[] = [];
    const slotOf = new Map<number, number>();
    const band = (k: number): Binding => {
      let s = slotOf.get(k);
      if (s === undefined) {
        s = slots.push({ input: a.Raster, band: k }) - 1;
        slotOf.set(k, s);
      }
      return { slot: s };
    };
    let copies = true;
    const outputs: IrNode[] = (['R', 'G', 'B'] as const).map((c) => {
      const path = at(`BandIndexes${c}`);
      const text = a[`BandIndexes${c}`];
      if (text === undefined || text.trim() === '') {
        throw invalidArgument(path, `BandIndexes${c} is required: ${byName ? 'a band name' : 'a band id such as B1'} or an expression`);
      }
      const t = text.trim();
      if (byName) {
        const k = names.indexOf(t.toLowerCase());
        if (k >= 0) return b.load((band(k) as { slot: number }).slot);
      } else {
        const m = WHOLE.exec(t) ?? BAND_REF.exec(t);
        if (m !== null) {
          const n = Number(m[1] ?? m[0]);
          if (!(n >= 1 && n <= src.bandCount)) {
            throw invalidArgument(path, `band ${t} does not exist: band ids are 1-based, B1..B${src.bandCount}`);
          }
          return b.load((band(n - 1) as { slot: number }).slot);
        }
      }
      copies = false;
      return bindUserExpression(
        text,
        b,
        {
          dialect: 'arithmetic',
          division: 'zero',
          resolve: (name) => {
            if (byName) {
              const k = names.indexOf(name.toLowerCase());
              return k >= 0 ? band(k) : undefined;
            }
            const m = BAND_REF.exec(name);
            const n = m === null ? 0 : Number(m[1]);
            return n >= 1 && n <= src.bandCount ? band(n - 1) : undefined;
          },
          names: () => (byName ? [...(src.bandNames ?? [])] : Array.from({ length: Math.min(src.bandCount, 20) }, (_, i) => `B${i + 1}`)),
        },
        path,
      );
    });
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: 3,
      pixelType: copies ? src.pixelType : floatOutputType(to, 'F32'),
      ...(copies ? (src.noData !== undefined ? { noData: src.noData } : {}) : { noData: Number.NaN }),
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
    };
    return { info, halo: 0, params: { program: compileProgram(outputs), slots, strictMask: true } };
  },

  kernel: expressionKernel,
});

/**
 * TransposeBits — copy chosen bits of each pixel to other bit positions of the output, for
 * unpacking quality bands (Landsat QA: 2-bit confidence fields to values 0..3).
 *
 * Spec: raster-functions.md §2 "TransposeBits" and the spec table (variableName `Raster`).
 * Math, per pixel: start from the fill value (ConstantFillValue, or the FillRaster pixel); for
 * each k, clear output bit OutputBitPositions[k] and set it to input bit InputBitPositions[k]:
 * `out = (fill & ~M) | Σ_k ((in >>> InputBitPositions[k]) & 1) << OutputBitPositions[k]`, M the
 * OR of the output bits. Bits are those of the value as an unsigned 32-bit integer (ToUint32:
 * signed values in two's complement, float values truncated toward zero), as the vendor's
 * integer QA bands hold them.
 * Fill: ConstantFillCheck true uses ConstantFillValue; false uses FillRaster, and reverts to the
 * constant when no FillRaster is given (spec table). ASSUMPTION (spec: "opt.", no default):
 * ConstantFillCheck absent means false when a FillRaster is given, true otherwise.
 * ASSUMPTION (spec: ConstantFillValue "required"): it is required when the constant fill is
 * used, not when a FillRaster fills.
 * Output: 1 band; natural type U8 when the highest bit the output can hold is below 8, U16
 * below 16, else U32 [spec: by max output bit]. ASSUMPTION (spec silent): the fill's bits count
 * too, so they are never cut: the constant's highest set bit, or the FillRaster's type width
 * (8/16/32; float fill rasters 32). No NoData value (integer); the mask says NoData.
 * ASSUMPTION (spec: output is 1 band): a multi-band Raster (or FillRaster) contributes its first
 * band, with a warning.
 * Edges and NoData: NoData where the Raster is NoData, or the FillRaster when it fills.
 * Errors (INVALID_ARGUMENT at the argument): missing or empty positions, lengths that differ,
 * positions outside 0..31, an output position given twice, a constant fill that is not an
 * integer in 0..4294967295 (or -2147483648..-1, taken as its two's complement).
 * Grids: the output is on the Raster's grid; a FillRaster on another grid is resampled onto it by
 * the engine (`Plan.align`, nearest: bit patterns are not interpolated), NoData outside its extent.
 * A FillRaster that does not overlap the Raster is INVALID_ARGUMENT at FillRaster (local/grid.ts).
 * outputPixelType: the bit patterns through the engine's cast to any real type that holds every
 * value the output bits (and fill) can make, 0..2^(top + 1) - 1 (values unchanged: U2 holds two
 * output bits); complex types, and types that would cut bits, are refused when the rule is built.
 */
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { RasterInfo } from '../../core/pixel-block.js';
import { isComplex, PIXEL_TYPE_INFO, type PixelType } from '../../core/pixel-type.js';
import { argPaths } from '../../graph/args.js';
import { checkHolds } from '../../graph/output-type.js';
import { defineFunction, type ArgSchema } from '../../graph/types.js';
import { CellsizeType, ExtentType, outputGrid } from '../local/grid.js';

const args = {
  InputBitPositions: {
    kind: 'numbers',
    integer: true,
    doc: 'Bit positions (0 = least significant, up to 31) read from the input, one per output position.',
  },
  OutputBitPositions: {
    kind: 'numbers',
    integer: true,
    doc: 'Bit positions (0..31) of the output that receive the input bits, same length as InputBitPositions.',
  },
  ConstantFillCheck: {
    kind: 'boolean',
    doc: 'true: start from ConstantFillValue; false: start from FillRaster (reverts to true without one). Default: false with a FillRaster, else true.',
  },
  ConstantFillValue: { kind: 'int', doc: 'The value output pixels start from when the constant fill is used (required then).' },
  Raster: { kind: 'raster', default: '$$', doc: 'Input raster (a quality band); defaults to the service raster ($$).' },
  FillRaster: { kind: 'raster', optional: true, doc: 'Raster whose pixels the output starts from when ConstantFillCheck is false.' },
} as const satisfies ArgSchema;

interface TransposeBitsParams {
  readonly input: number;
  readonly inputBits: readonly number[];
  readonly outputBits: readonly number[];
  /** Index of the FillRaster input when it fills, else undefined (constant fill). */
  readonly fillInput: number | undefined;
  /** The constant fill as an unsigned 32-bit integer. */
  readonly fill: number;
}

const at = argPaths(args);

export const transposeBits = defineFunction<typeof args, TransposeBitsParams>({
  name: 'TransposeBits',
  summary: 'Copy input bits to output bit positions over a constant or raster fill (QA band unpacking).',
  variableName: 'Raster',
  family: 'bands',
  verification: "reference: NumPy bit operations golden on a 16-bit QA-style raster; hand: the vendor's Landsat 8 QA examples",
  args,

  plan(a, inputs, to) {
    const src = inputs[a.Raster]!;
    const warnings: string[] = [];
    const inBits = positions(a.InputBitPositions, 'InputBitPositions');
    const outBits = positions(a.OutputBitPositions, 'OutputBitPositions');
    if (inBits.length !== outBits.length) {
      throw invalidArgument(
        at('OutputBitPositions'),
        `OutputBitPositions has ${outBits.length} position(s) but InputBitPositions has ${inBits.length}; they pair one to one`,
      );
    }
    const twice = outBits.find((b, i) => outBits.indexOf(b) !== i);
    if (twice !== undefined) {
      throw invalidArgument(at('OutputBitPositions'), `output bit ${twice} is given twice; each output bit takes one input bit`);
    }
    if (isComplex(src.pixelType)) throw unsupportedInput(at('Raster'), `TransposeBits does not take complex (${src.pixelType}) rasters`);
    if (src.bandCount > 1) warnings.push(`Raster has ${src.bandCount} bands; TransposeBits reads the first one`);

    const hasFill = a.FillRaster !== undefined;
    const useRaster = hasFill && a.ConstantFillCheck !== true;
    if (hasFill && !useRaster) warnings.push('ConstantFillCheck is true: FillRaster is ignored');
    if (a.ConstantFillCheck === false && !hasFill)
      warnings.push('ConstantFillCheck is false but no FillRaster is given: ConstantFillValue fills');

    let fill = 0;
    let fillBits = 0; // bits the fill may occupy
    if (useRaster) {
      const f = inputs[a.FillRaster]!;
      if (isComplex(f.pixelType)) throw unsupportedInput(at('FillRaster'), `FillRaster cannot be complex (${f.pixelType})`);
      outputGrid([src, f], ExtentType.FirstOf, CellsizeType.FirstOf, { paths: [at('Raster'), at('FillRaster')] });
      if (f.bandCount > 1) warnings.push(`FillRaster has ${f.bandCount} bands; TransposeBits reads the first one`);
      const ti = PIXEL_TYPE_INFO[f.pixelType];
      fillBits = ti.integer ? Math.max(8, ti.bits) : 32;
      if (a.ConstantFillValue !== undefined) warnings.push('FillRaster fills: ConstantFillValue is ignored');
    } else {
      const v = a.ConstantFillValue;
      if (v === undefined) {
        throw invalidArgument(
          at('ConstantFillValue'),
          'ConstantFillValue is required when the output is filled with a constant (no FillRaster)',
        );
      }
      if (v < -2147483648 || v > 4294967295) {
        throw invalidArgument(at('ConstantFillValue'), `ConstantFillValue must fit 32 bits (-2147483648..4294967295), got ${v}`);
      }
      fill = v >>> 0;
      fillBits = 32 - Math.clz32(fill);
    }

    const top = Math.max(fillBits - 1, ...outBits);
    const pixelType: PixelType = top < 8 ? 'U8' : top < 16 ? 'U16' : 'U32';
    checkHolds('TransposeBits', to, 0, 2 ** (top + 1) - 1, 'bit patterns');
    const info: RasterInfo = {
      width: src.width,
      height: src.height,
      bandCount: 1,
      pixelType,
      extent: src.extent,
      cellSize: src.cellSize,
      ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
    };
    return {
      info,
      halo: 0,
      params: { input: a.Raster, inputBits: inBits, outputBits: outBits, fillInput: useRaster ? a.FillRaster : undefined, fill },
      ...(useRaster ? { align: inputs.map((_, k) => (k === a.FillRaster ? ({ method: 'nearest' } as const) : undefined)) } : {}),
      ...(warnings.length ? { warnings } : {}),
    };
  },

  kernel(p, inputs, out) {
    const src = inputs[p.input]!;
    const values = src.bands[0]!;
    const mask = out.mask;
    mask.set(src.mask);
    const n = mask.length;
    const dst = out.bands[0]!;
    const k = p.inputBits.length;
    const inBits = Int32Array.from(p.inputBits);
    const outBits = Int32Array.from(p.outputBits);
    let clear = 0;
    for (let j = 0; j < k; j++) clear |= 1 << outBits[j]!;
    const keep = ~clear;
    const fillBlock = p.fillInput === undefined ? undefined : inputs[p.fillInput]!;
    const fillPlane = fillBlock?.bands[0];
    if (fillBlock) for (let i = 0; i < n; i++) if (fillBlock.mask[i] === 0) mask[i] = 0;
    const constant = p.fill | 0;
    for (let i = 0; i < n; i++) {
      const v = values[i]! >>> 0;
      let o = (fillPlane === undefined ? constant : fillPlane[i]! >>> 0) & keep;
      for (let j = 0; j < k; j++) o |= ((v >>> inBits[j]!) & 1) << outBits[j]!;
      dst[i] = o >>> 0;
    }
  },
});

/** Positions as given, checked: present, non-empty, each an integer in 0..31. */
function positions(list: readonly number[] | undefined, name: 'InputBitPositions' | 'OutputBitPositions'): number[] {
  if (list === undefined || list.length === 0) throw invalidArgument(at(name), `${name} is required: a list of bit positions 0..31`);
  const bad = list.find((b) => b < 0 || b > 31);
  if (bad !== undefined) throw invalidArgument(at(name), `bit position ${bad} is outside 0..31`);
  return [...list];
}

/**
 * Operands of the multi-input expression functions (Local, RasterCalculator): rasters and
 * constants, band broadcasting, the output grid, variable slots, and the shared kernel.
 *
 * - Each operand is a raster (an input index) or a constant (a scalar `Rasters` element: one value,
 *   or one per band). At least one must be a raster.
 * - Band counts (spec §2 Local "ProcessAsMultiband"): the output has N bands, N the largest
 *   operand band count; an operand with one band (or one constant) is broadcast to every band,
 *   other counts must equal N.
 * - Grid (spec §1.5): `outputGrid(rasters, ExtentType, CellsizeType)` from local/grid.ts; rasters
 *   not on it are resampled by the engine (Plan.align: nearest for thematic, bilinear otherwise).
 * - Slots: one per (input, band) pair actually read; the kernel binds them to block planes.
 */
import { pairMultidimensional, type MultidimPairing, type PairOptions } from '../../core/multidim.js';
import { invalidArgument, unsupportedInput } from '../../core/errors.js';
import type { PixelBlock, RasterInfo } from '../../core/pixel-block.js';
import { isComplex } from '../../core/pixel-type.js';
import type { AlignSpec } from '../../graph/types.js';
import { alignMethod, outputGrid, type Grid } from '../local/grid.js';
import type { Binding, Program } from './compile.js';
import { runProgram, type SlotSource } from './evaluate.js';

export interface Operand {
  readonly input: number;
  readonly info: RasterInfo;
  /** Path of the operand in the rule, for messages. */
  readonly path: string;
}

export interface SlotRef {
  readonly input: number;
  readonly band: number;
}

export interface PlannedOperands {
  readonly bandCount: number;
  readonly grid: Grid;
  /** The first raster operand (band names, spatial reference). */
  readonly first: RasterInfo;
  readonly align: readonly (AlignSpec | undefined)[];
  /** Binding of operand j in output band b (b = 0 for pooled use). */
  bind(j: number, b: number): Binding;
  /** Bindings of every band of operand j (pooled statistics). */
  bindAll(j: number): Binding[];
  /** The slot table for the kernel (call after binding). */
  slots(): SlotRef[];
  /** Multidimensional operands: how their slices were paired (output band b = slice pairing b). */
  readonly multidim?: MultidimPairing;
}

/** MatchVariable / UnionDimension of the function (seed section 8 rule 6), and its argument paths for their errors. */
export type MultidimFlags = Omit<PairOptions, 'paths'>;

const bandsOf = (info: RasterInfo): number => (info.constant !== undefined ? info.constant.length : info.bandCount);

export function planOperands(
  fn: string,
  operands: readonly Operand[],
  inputs: readonly RasterInfo[],
  extentType: number,
  cellsizeType: number,
  rastersPath: string,
  flags: MultidimFlags,
  needsAll = true,
): PlannedOperands {
  const rasters = operands.filter((o) => o.info.constant === undefined);
  const first = rasters[0];
  if (first === undefined) throw invalidArgument(rastersPath, `${fn} needs at least one raster (every operand is a constant)`);
  for (const o of operands) {
    if (o.info.constant !== undefined && o.info.constant.length === 0) throw invalidArgument(o.path, 'an empty list of constants');
    if (o.info.constant === undefined && isComplex(o.info.pixelType)) {
      throw unsupportedInput(o.path, `${fn} does not take complex (${o.info.pixelType}) rasters; use Complex first`);
    }
  }
  const md = pairMultidimensional(
    operands.map((o) => o.info),
    { ...flags, paths: operands.map((o) => o.path) },
  );
  const bandCount = md?.bandCount ?? Math.max(...operands.map((o) => bandsOf(o.info)));
  for (const o of md ? [] : operands) {
    const n = bandsOf(o.info);
    if (n !== 1 && n !== bandCount) {
      throw invalidArgument(
        o.path,
        `band counts do not match: this operand has ${n} ${o.info.constant ? 'constants' : 'bands'}, another has ${bandCount}; ` +
          'operands need one band (or one constant), or the same band count',
      );
    }
  }
  const grid = outputGrid(
    operands.map((o) => o.info),
    extentType,
    cellsizeType,
    { paths: operands.map((o) => o.path), needsAll },
  )!;
  const slotOf = new Map<string, number>();
  const table: SlotRef[] = [];
  const slot = (input: number, band: number): number => {
    const key = `${input}:${band}`;
    let s = slotOf.get(key);
    if (s === undefined) {
      s = table.push({ input, band }) - 1;
      slotOf.set(key, s);
    }
    return s;
  };
  const bindBand = (o: Operand, band: number): Binding =>
    o.info.constant !== undefined ? { value: o.info.constant[band]! } : { slot: slot(o.input, band) };
  return {
    bandCount,
    grid,
    first: first.info,
    align: inputs.map((i, k) => (i.constant === undefined && operands.some((o) => o.input === k) ? alignMethod(i) : undefined)),
    bind: (j, b) => {
      const o = operands[j]!;
      return bindBand(o, md ? md.bands[j]![b]! : bandsOf(o.info) === 1 ? 0 : b);
    },
    bindAll: (j) => {
      const o = operands[j]!;
      return Array.from({ length: bandsOf(o.info) }, (_, b) => bindBand(o, b));
    },
    slots: () => table,
    ...(md ? { multidim: md } : {}),
  };
}

/** Output info on the operands' grid. */
export function operandsInfo(p: PlannedOperands, bandCount: number, pixelType: RasterInfo['pixelType']): RasterInfo {
  const g = p.grid;
  const float = pixelType === 'F32' || pixelType === 'F64';
  return {
    width: g.width,
    height: g.height,
    bandCount,
    pixelType,
    ...(float ? { noData: Number.NaN } : {}),
    extent: g.extent,
    cellSize: g.cellSize,
    ...(g.spatialReference ? { spatialReference: g.spatialReference } : {}),
    // ASSUMPTION (spec silent): band b of the result stands for band b of the first raster, so its
    // names carry over when the band counts agree.
    ...(p.first.bandNames?.length === bandCount ? { bandNames: p.first.bandNames } : {}),
    ...(p.multidim && p.multidim.bandCount === bandCount
      ? { multidimensional: p.multidim.multidimensional, bandNames: p.multidim.bandNames }
      : {}),
  };
}

export interface ExpressionParams {
  readonly program: Program;
  readonly slots: readonly SlotRef[];
  /** AND the masks of every input read (BandArithmetic); otherwise NoData travels as NaN. */
  readonly strictMask: boolean;
}

/** The kernel of every expression function: bind slots to planes, run the program. */
export function expressionKernel(p: ExpressionParams, inputs: readonly PixelBlock[], out: PixelBlock): void {
  const sources: SlotSource[] = p.slots.map((s) => {
    const block = inputs[s.input]!;
    return { plane: block.bands[s.band]!, mask: block.mask };
  });
  runProgram(p.program, sources, out, p.strictMask);
}

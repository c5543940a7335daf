/**
 * Helpers for a function's plan deciding what a rule's `outputPixelType` (`to`) means for it
 * (see RasterFunction.plan): computing into it, leaving a value-preserving conversion to the
 * engine's cast, or refusing a type the function cannot produce.
 */
import { EngineError } from '../core/errors.js';
import type { RasterInfo } from '../core/pixel-block.js';
import { isComplex, PIXEL_TYPE_INFO, promote, representable, type PixelType } from '../core/pixel-type.js';

/** The JSON path of a rule's outputPixelType, relative to the rule (the builder anchors it). */
const OUTPUT_PIXEL_TYPE_PATH = 'outputPixelType';

/** An outputPixelType the function cannot produce: INVALID_ARGUMENT at `outputPixelType`. */
export function refuseType(fnName: string, to: PixelType, why: string): EngineError {
  return new EngineError('INVALID_ARGUMENT', `${fnName} cannot produce outputPixelType ${to}: ${why}`, { path: OUTPUT_PIXEL_TYPE_PATH });
}

/**
 * Outputs whose values are what they are in any type (colours, class codes, flags, shades): any
 * real type that holds `lo..hi` keeps them (the function returns its natural type and the engine's
 * cast converts without changing a value); complex types, and types that would saturate values
 * into one another, are refused.
 */
export function checkHolds(fnName: string, to: PixelType | undefined, lo: number, hi: number, what: string): void {
  if (to === undefined) return;
  if (isComplex(to)) throw refuseType(fnName, to, `its output is ${what}, which have no complex form; use a real type`);
  const info = PIXEL_TYPE_INFO[to];
  if (info.min > lo || info.max < hi) {
    throw refuseType(fnName, to, `its output is ${what} (${lo}..${hi}), which ${to} (${info.min}..${info.max}) cannot hold`);
  }
}

/** Colour channels 0..255 (see checkHolds). */
export const checkColourType = (fnName: string, to: PixelType | undefined): void => checkHolds(fnName, to, 0, 255, 'colour channels');

/**
 * NoData of a function's output of type `to` computed from an input whose NoData is `noData`:
 * the input's value when `to` holds it and it cannot collide with computed values (an integer
 * input's NoData in a float output would: a Sobel of a U8 band with NoData 0 gives many valid
 * zeros, so float outputs of integer inputs use NaN); NaN for other float types; none otherwise
 * (the mask still marks the pixels).
 */
export function computedNoData(noData: number | undefined, from: PixelType, to: PixelType): number | undefined {
  const float = !PIXEL_TYPE_INFO[to].integer;
  if (noData === undefined) return undefined;
  if (float && PIXEL_TYPE_INFO[from].integer) return Number.NaN;
  if (representable(noData, to)) return noData;
  return float ? Number.NaN : undefined;
}

/**
 * The real type a function computes into for `to`: `to` itself, or the component type of a
 * complex `to` (the engine's cast then makes the values real parts, imaginary parts 0).
 */
export function realTypeOf(to: PixelType): PixelType {
  return to === 'C64' ? 'F32' : to === 'C128' ? 'F64' : to;
}

/**
 * `info` (a function's output description that carries its input's values, type and NoData)
 * retyped to `to` (undefined: unchanged): the pixel type, the NoData of `computedNoData`, and
 * statistics, histograms and radiometry dropped when `to` cannot hold every value of the input
 * type (they no longer describe the pixels).
 */
export function retypedInfo(info: RasterInfo, to: PixelType | undefined): RasterInfo {
  if (to === undefined || to === info.pixelType) return info;
  const { noData: _n, statistics, histograms, radiometry, ...rest } = info;
  const noData = computedNoData(info.noData, info.pixelType, to);
  const holds = promote([info.pixelType, to]) === to;
  return {
    ...rest,
    pixelType: to,
    ...(noData !== undefined ? { noData } : {}),
    ...(holds && statistics ? { statistics } : {}),
    ...(holds && histograms ? { histograms } : {}),
    ...(holds && radiometry ? { radiometry } : {}),
  };
}

/**
 * For functions that compute in floating point and whose natural type is `natural` (F32 or F64):
 * a float outputPixelType is computed into directly (F64 keeps double precision, F32 rounds
 * once); an integer one is the float result through the engine's cast (round half away from
 * zero, saturate, NaN -> NoData: spec 1.2 rules 2 and 3; the same pixels as storing the result
 * into the type); a complex one its component type, then the engine's cast.
 */
export function floatOutputType(to: PixelType | undefined, natural: PixelType): PixelType {
  if (to === undefined) return natural;
  const real = realTypeOf(to);
  return PIXEL_TYPE_INFO[real].integer ? natural : real;
}

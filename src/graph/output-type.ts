/**
 * Helpers for a function's plan deciding what a rule's `outputPixelType` (`to`) means for it
 * (see RasterFunction.plan): computing into it, leaving a value-preserving conversion to the
 * engine's cast, or refusing a type the function cannot produce.
 */
import { EngineError } from '../core/errors.js';
import { isComplex, PIXEL_TYPE_INFO, representable, type PixelType } from '../core/pixel-type.js';

/** The JSON path of a rule's outputPixelType, relative to the rule (the builder anchors it). */
export const OUTPUT_PIXEL_TYPE_PATH = 'outputPixelType';

/** An outputPixelType the function cannot produce: INVALID_ARGUMENT at `outputPixelType`. */
export function refuseType(fnName: string, to: PixelType, why: string): EngineError {
  return new EngineError('INVALID_ARGUMENT', `${fnName} cannot produce outputPixelType ${to}: ${why}`, { path: OUTPUT_PIXEL_TYPE_PATH });
}

/**
 * Outputs that are colours (0..255 per channel): any real type that holds 0..255 keeps them
 * (the engine's cast, values unchanged); complex types and types narrower than a byte are refused.
 */
export function checkColourType(fnName: string, to: PixelType | undefined): void {
  if (to === undefined) return;
  if (isComplex(to)) throw refuseType(fnName, to, 'its output is colour channels 0..255, which have no complex form; use U8 or a wider real type');
  const info = PIXEL_TYPE_INFO[to];
  if (info.min > 0 || info.max < 255) throw refuseType(fnName, to, `its output is colour channels 0..255, which ${to} (${info.min}..${info.max}) cannot hold; use U8 or a wider type`);
}

/**
 * Outputs that are codes (class values, indexes, flags in `lo..hi`): any real type that holds
 * the whole range keeps them (the engine's cast, values unchanged); complex types and types that
 * would saturate codes into one another are refused.
 */
export function checkCodeType(fnName: string, to: PixelType | undefined, lo: number, hi: number, what = 'class values'): void {
  if (to === undefined) return;
  if (isComplex(to)) throw refuseType(fnName, to, `its output is ${what}, which have no complex form; use an integer type`);
  const info = PIXEL_TYPE_INFO[to];
  if (info.min > lo || info.max < hi) {
    throw refuseType(fnName, to, `its ${what} run ${lo}..${hi}, which ${to} (${info.min}..${info.max}) cannot hold without merging them`);
  }
}

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

/**
 * The engine's cast (GDAL-like: round half away from zero, saturate, NaN -> NoData), added after a
 * function whose plan leaves a rule's `outputPixelType` to it because converting its natural
 * values gives the same pixels as computing into the type (see RasterFunction.plan). Internal:
 * not in the registry.
 */
import { castPlane, PIXEL_TYPES, promote, representable, type PixelType } from '../core/pixel-type.js';
import { defineFunction } from './types.js';

export const castFunction = defineFunction({
  name: 'Cast',
  summary: "Convert to the rule's outputPixelType (round half away from zero, saturate, NaN -> NoData).",
  family: 'internal',
  verification: 'hand: casting table in src/core/pixel-type.test.ts',
  args: {
    to: { kind: 'string', values: PIXEL_TYPES, doc: 'Target pixel type.' },
    Raster: { kind: 'raster', doc: 'Input.' },
  },
  plan(a, inputs) {
    const input = inputs[a.Raster]!;
    const to = a.to as PixelType;
    // Keep the input's NoData when the new type can hold it; float types fall back to NaN.
    const noData =
      input.noData !== undefined && representable(input.noData, to)
        ? input.noData
        : to.startsWith('F') || to.startsWith('C')
          ? Number.NaN
          : undefined;
    // A narrowing cast alters values, so the input no longer holds the source's values (RasterInfo.radiometry).
    const { radiometry, ...rest } = input;
    const keep = radiometry !== undefined && promote([input.pixelType, to]) === to;
    return { info: { ...rest, pixelType: to, noData, ...(keep ? { radiometry } : {}) }, halo: 0, params: { from: input.pixelType, to } };
  },
  kernel(p, [input], out) {
    out.mask.set(input!.mask);
    for (let b = 0; b < out.bands.length; b++) out.bands[b] = castPlane(input!.bands[b]!, p.from, p.to, out.mask);
  },
});

/**
 * The image service's legend, from what a request renders (the service's default rule, or the
 * request's `renderingRule`, after `bandIds`):
 *
 * - a single band with a colormap (the raster's own palette, or a rule ending in Colormap, a
 *   classify with a colormap, ...): one entry per colormap value, label and `values` the value,
 *   a 20x20 PNG swatch of its colour (alpha kept);
 * - RGB output (3 or more bands, no colormap): the vendor's three entries `Red: <band name>`,
 *   `Green: ...`, `Blue: ...` with pure red, green and blue swatches;
 * - any other single band (a continuous stretch, a hillshade, raw data): Decision: a ramp legend of
 *   two entries, `High : <max>` and `Low : <min>` — the range of the band's statistics (the
 *   source's for an unruled service, else the rule's output statistics when it declares them, else
 *   the output pixel type's range) — with swatches from the top and bottom halves of a white-to-black
 *   gray ramp, as the vendor draws a stretched band.
 */
import type { BandStatistics, Colormap, RasterInfo } from '../../core/pixel-block.js';
import { PIXEL_TYPE_INFO } from '../../core/pixel-type.js';
import { rect } from '../../core/rect.js';
import { encodePng } from '../../io/encode-png.js';

export const SWATCH = 20;

export interface LegendEntry {
  readonly label: string;
  readonly url: string;
  readonly imageData: string;
  readonly contentType: 'image/png';
  readonly height: number;
  readonly width: number;
  readonly values?: readonly (number | string)[];
}

/** A 20x20 RGBA PNG, `pixel(x, y)` giving [r, g, b, a], base64. */
export function swatchPng(pixel: (x: number, y: number) => readonly [number, number, number, number]): string {
  const n = SWATCH * SWATCH;
  const bands = [new Uint8Array(n), new Uint8Array(n), new Uint8Array(n), new Uint8Array(n)];
  for (let y = 0; y < SWATCH; y++)
    for (let x = 0; x < SWATCH; x++) {
      const c = pixel(x, y);
      for (let b = 0; b < 4; b++) bands[b]![y * SWATCH + x] = c[b]!;
    }
  const info: RasterInfo = {
    width: SWATCH,
    height: SWATCH,
    bandCount: 4,
    pixelType: 'U8',
    extent: { xmin: 0, ymin: 0, xmax: SWATCH, ymax: SWATCH },
    cellSize: { x: 1, y: 1 },
  };
  const png = encodePng({ rect: rect(0, 0, SWATCH, SWATCH), pixelType: 'U8', bands, mask: new Uint8Array(n).fill(1) }, info);
  return Buffer.from(png).toString('base64');
}

const entry = (label: string, imageData: string, values?: readonly (number | string)[]): LegendEntry => ({
  label,
  url: '',
  imageData,
  contentType: 'image/png',
  height: SWATCH,
  width: SWATCH,
  ...(values ? { values } : {}),
});

/** Number as the vendor prints it in labels: integers bare, others to at most 6 significant digits. */
export function labelNumber(v: number): string {
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(6)));
}

/** Colormap entries (at most `limit`, the vendor's legends stop at a few hundred classes). */
export function colormapLegend(cm: Colormap, limit = 256): LegendEntry[] {
  const out: LegendEntry[] = [];
  const count = Math.min(cm.values.length, limit);
  for (let i = 0; i < count; i++) {
    const v = cm.values[i]!;
    const c = [cm.rgb[3 * i]!, cm.rgb[3 * i + 1]!, cm.rgb[3 * i + 2]!, cm.alpha?.[i] ?? 255] as const;
    out.push(
      entry(
        labelNumber(v),
        swatchPng(() => c),
        [v],
      ),
    );
  }
  return out;
}

export function rgbLegend(bandNames: readonly string[]): LegendEntry[] {
  const colours: [string, readonly [number, number, number, number]][] = [
    ['Red', [255, 0, 0, 255]],
    ['Green', [0, 255, 0, 255]],
    ['Blue', [0, 0, 255, 255]],
  ];
  return colours.map(([name, c], i) =>
    entry(
      `${name}: ${bandNames[i] ?? `Band_${i + 1}`}`,
      swatchPng(() => c),
    ),
  );
}

/** The two-entry ramp legend of a single continuous band over [min, max]. */
export function rampLegend(min: number, max: number): LegendEntry[] {
  const half = SWATCH * 2;
  const grey = (t: number): readonly [number, number, number, number] => {
    const g = Math.round(255 * (1 - t));
    return [g, g, g, 255];
  };
  return [
    entry(
      `High : ${labelNumber(max)}`,
      swatchPng((_x, y) => grey(y / (half - 1))),
      [max],
    ),
    entry(
      `Low : ${labelNumber(min)}`,
      swatchPng((_x, y) => grey((SWATCH + y) / (half - 1))),
      [min],
    ),
  ];
}

/**
 * The legend entries of a rendered output whose info is `info`. `rangeOf(band)` gives the range of
 * a continuous band when the caller knows it better (the service's statistics for an unruled
 * service); else the output's statistics, else its pixel type's range.
 */
export function legendEntries(info: RasterInfo, rangeOf?: (band: number) => BandStatistics | undefined): LegendEntry[] {
  if (info.bandCount === 1 && info.colormap !== undefined) return colormapLegend(info.colormap);
  if (info.bandCount >= 3) return rgbLegend(info.bandNames ?? []);
  const s = rangeOf?.(0) ?? info.statistics?.[0];
  if (s !== undefined) return rampLegend(s.min, s.max);
  const t = PIXEL_TYPE_INFO[info.pixelType];
  return rampLegend(t.min, t.max);
}

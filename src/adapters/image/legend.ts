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
import { EngineError } from '../../core/errors.js';
import { encodePng } from '../../io/encode-png.js';
import { readParams, respond, withRestErrors, type Params } from '../rest.js';
import { openRequestedService, type ImageDeps } from './access.js';
import { planServiceRule, resolveServiceRule } from './render-request.js';
import { imageServicesOf, type ImageServices } from './service.js';

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

// ---------------------------------------------------------------------------------------------
// The operation

/** The vendor's legendType for what the entries show. */
const legendTypeOf = (info: RasterInfo): string =>
  info.bandCount === 1 && info.colormap !== undefined ? 'Unique Values' : info.bandCount >= 3 ? 'RGB Composite' : 'Stretched';

/** `info` restricted to `ids` (0-based bands of the rule's output), band names kept ("Band_n" when unnamed). */
function selectInfoBands(info: RasterInfo, ids: readonly number[]): RasterInfo {
  const names = ids.map((i) => info.bandNames?.[i] ?? `Band_${i + 1}`);
  const { colormap, statistics, ...rest } = info;
  const stats = statistics ? ids.map((i) => statistics[i]) : undefined;
  return {
    ...rest,
    bandCount: ids.length,
    bandNames: names,
    ...(ids.length === 1 && colormap ? { colormap } : {}),
    ...(stats && stats.every((s) => s !== undefined) ? { statistics: stats as BandStatistics[] } : {}),
  };
}

/** `bandIds` of a legend request: 0-based indexes of the rule's output bands. */
function legendBandIds(params: Params, bandCount: number): number[] | undefined {
  const list = params.list('bandIds');
  if (list === undefined) return undefined;
  const ids = list.map(Number);
  if (ids.length === 0 || ids.some((n) => !Number.isInteger(n) || n < 0 || n >= bandCount)) {
    const detail = `'bandIds' must be band indexes from 0 to ${bandCount - 1} (e.g. 2,1,0).`;
    throw new EngineError('INVALID_ARGUMENT', detail, { path: 'bandIds', details: [detail] });
  }
  return ids;
}

/** The legend handler. */
export function legendHandler(deps: ImageDeps, services: ImageServices = imageServicesOf(deps)) {
  return withRestErrors('sharing', async (req) => {
    const params = await readParams(req);
    const { service } = await openRequestedService(deps, services, req, params);
    const rule = resolveServiceRule(service, params.get('renderingRule'));
    const { root } = await planServiceRule(service, rule, 0, 'renderingRule', services.limits);
    const full = root.info;
    const full1 = full.bandNames ? full : { ...full, bandNames: Array.from({ length: full.bandCount }, (_, i) => `Band_${i + 1}`) };
    const ids = legendBandIds(params, full.bandCount);
    const info = ids ? selectInfoBands(full1, ids) : full1;
    // An unruled service shows its raster: the service's statistics (file, exact or approximate).
    const rangeOf = (band: number): BandStatistics | undefined =>
      rule === undefined ? service.statistics[ids?.[band] ?? band] : info.statistics?.[band];
    const layer = {
      layerId: 0,
      layerName: service.name,
      layerType: 'Raster Layer',
      minScale: 0,
      maxScale: 0,
      legendType: legendTypeOf(info),
      legend: legendEntries(info, rangeOf),
    };
    return respond(params.get('f'), { layers: [layer] });
  });
}

/**
 * Scale bars (ExportScaleBar): an alternating or single-division bar for a map scale, drawn with
 * @napi-rs/canvas in DejaVu Sans (registered from /usr/share/fonts when the system has not).
 *
 * Geometry: the bar image's pixel is `0.0254 / dpi` metres of paper, i.e. `scale * 0.0254 / dpi`
 * metres of ground. The bar shows `divisions` divisions of a round value (1, 2, 2.5 or 5 x 10^k
 * units, the largest whose bar fits the image width beside its labels), plus `divisionsBeforeZero`
 * divisions left of zero; its length in pixels is exactly the ground distance it labels divided by
 * the ground size of a pixel.
 */
import { existsSync } from 'node:fs';
import { createCanvas, GlobalFonts, type SKRSContext2D } from '@napi-rs/canvas';
import { METERS_PER_DEGREE, METERS_PER_INCH } from './view.js';
import { labelNumber } from '../image/legend.js';
import { css, type Rgba } from './symbols.js';

/** Metres per unit of the SOAP `Units` values. */
export const UNIT_METERS: Readonly<Record<string, number>> = {
  geoInches: 0.0254,
  geoPoints: 0.0254 / 72,
  geoFeet: 0.3048,
  geoYards: 0.9144,
  geoMiles: 1609.344,
  geoNauticalMiles: 1852,
  geoMillimeters: 0.001,
  geoCentimeters: 0.01,
  geoMeters: 1,
  geoKilometers: 1000,
  geoDecimalDegrees: METERS_PER_DEGREE,
  geoDecimeters: 0.1,
};

/** The unit names a scale bar writes by default (the vendor's). */
export const UNIT_LABELS: Readonly<Record<string, string>> = {
  geoInches: 'Inches',
  geoPoints: 'Points',
  geoFeet: 'Feet',
  geoYards: 'Yards',
  geoMiles: 'Miles',
  geoNauticalMiles: 'Nautical Miles',
  geoMillimeters: 'Millimeters',
  geoCentimeters: 'Centimeters',
  geoMeters: 'Meters',
  geoKilometers: 'Kilometers',
  geoDecimalDegrees: 'Decimal Degrees',
  geoDecimeters: 'Decimeters',
};

export type LabelFrequency =
  | 'geoScaleBarNone'
  | 'geoScaleBarOne'
  | 'geoScaleBarMajorDivisions'
  | 'geoScaleBarDivisions'
  | 'geoScaleBarDivisionsAndFirstMidpoint'
  | 'geoScaleBarDivisionsAndFirstSubdivisions'
  | 'geoScaleBarDivisionsAndSubdivisions';
export type VertPos = 'geoAbove' | 'geoTop' | 'geoOn' | 'geoBottom' | 'geoBelow';
export type ScaleBarPos =
  | 'geoScaleBarAbove'
  | 'geoScaleBarBeforeLabels'
  | 'geoScaleBarAfterLabels'
  | 'geoScaleBarBeforeBar'
  | 'geoScaleBarAfterBar'
  | 'geoScaleBarBelow';

export interface TextStyle {
  readonly family: string;
  /** Points. */
  readonly size: number;
  readonly color: Rgba;
  readonly bold: boolean;
  readonly italic: boolean;
}

export interface ScaleBarSpec {
  readonly kind: 'alternating' | 'single';
  /** SOAP Units value of the bar's units; undefined: chosen from the map's units (see `barUnits`). */
  readonly units?: string;
  readonly mapUnits: string;
  readonly unitLabel?: string;
  /** A fixed division value (units); used when `resizeHint` is fixed. */
  readonly division?: number;
  readonly divisions: number;
  readonly subdivisions: number;
  readonly divisionsBeforeZero: number;
  readonly resizeHint: 'geoScaleBarFixed' | 'geoScaleBarAutoDivision' | 'geoScaleBarAutoDivisions';
  /** Points. */
  readonly barHeight: number;
  readonly labelFrequency: LabelFrequency;
  readonly labelPosition: VertPos;
  readonly labelGap: number;
  readonly labelStyle: TextStyle;
  readonly unitLabelPosition: ScaleBarPos;
  readonly unitLabelGap: number;
  readonly unitLabelStyle: TextStyle;
  readonly fill1: Rgba;
  readonly fill2: Rgba;
  readonly outline: Rgba;
  /** Points. */
  readonly outlineWidth: number;
  /** NumberFormat of the labels (default: whole numbers bare, others to 6 significant digits). */
  readonly numberFormat?: NumberFormat;
  /** Division and subdivision marks (points; 0 = none), where (above, on or below the bar), how often, and their line. */
  readonly marks?: {
    readonly divisionHeight: number;
    readonly subdivisionHeight: number;
    readonly position: VertPos;
    readonly frequency: LabelFrequency;
    readonly color: Rgba;
    /** Points. */
    readonly width: number;
  };
}

export interface NumberFormat {
  readonly rounding: 'decimals' | 'significant';
  readonly value: number;
  readonly separator: boolean;
  readonly zeroPad: boolean;
  readonly showPlus: boolean;
}

/** A label number per `format` (NumericFormat: rounding, thousands separator, zero padding, plus sign). */
export function formatNumber(v: number, format: NumberFormat | undefined): string {
  const clean = Number(v.toPrecision(12));
  if (!format) return labelNumber(clean);
  const n = Math.max(0, Math.min(format.rounding === 'decimals' ? 20 : 21, Math.round(format.value)));
  let text =
    format.rounding === 'decimals'
      ? clean.toFixed(n)
      : n === 0
        ? String(Math.round(clean))
        : Number(clean.toPrecision(n)).toFixed(Math.max(0, n - 1 - Math.floor(Math.log10(Math.abs(clean) || 1))));
  if (!format.zeroPad && text.includes('.')) text = text.replace(/\.?0+$/, '');
  if (format.separator) {
    const [int, frac] = text.split('.');
    text = int!.replace(/\B(?=(\d{3})+(?!\d))/g, ',') + (frac !== undefined ? `.${frac}` : '');
  }
  if (format.showPlus && clean > 0) text = `+${text}`;
  return text;
}

export const DEFAULT_TEXT: TextStyle = { family: 'DejaVu Sans', size: 8, color: [0, 0, 0, 255], bold: false, italic: false };

/** Decision: defaults where the request leaves a field out (an alternating bar of 4 divisions, labels above). */
export function defaultScaleBar(mapUnits: string): ScaleBarSpec {
  return {
    kind: 'alternating',
    mapUnits,
    divisions: 4,
    subdivisions: 0,
    divisionsBeforeZero: 0,
    resizeHint: 'geoScaleBarAutoDivision',
    barHeight: 6,
    labelFrequency: 'geoScaleBarDivisions',
    labelPosition: 'geoAbove',
    labelGap: 3,
    labelStyle: DEFAULT_TEXT,
    unitLabelPosition: 'geoScaleBarAfterBar',
    unitLabelGap: 3,
    unitLabelStyle: DEFAULT_TEXT,
    fill1: [0, 0, 0, 255],
    fill2: [255, 255, 255, 255],
    outline: [0, 0, 0, 255],
    outlineWidth: 0.75,
  };
}

let fontsReady = false;
/** DejaVu Sans (and bold/oblique) registered with the canvas when the system fonts were not found. */
export function ensureFonts(): void {
  if (fontsReady) return;
  fontsReady = true;
  if (GlobalFonts.has('DejaVu Sans')) return;
  for (const f of ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf', 'DejaVuSans-Oblique.ttf', 'DejaVuSans-BoldOblique.ttf']) {
    const p = `/usr/share/fonts/truetype/dejavu/${f}`;
    if (existsSync(p)) GlobalFonts.registerFromPath(p, 'DejaVu Sans');
  }
}

export function fontOf(style: TextStyle, pxPerPt: number): string {
  ensureFonts();
  const family = GlobalFonts.has(style.family) ? style.family : 'DejaVu Sans';
  return `${style.italic ? 'italic ' : ''}${style.bold ? 'bold ' : ''}${style.size * pxPerPt}px "${family}"`;
}

/** Units of the bar: the request's, else the map's, metres becoming kilometres (feet: miles) for long bars; degrees: kilometres. */
export function barUnits(spec: ScaleBarSpec, groundMeters: number): string {
  if (spec.units && spec.units !== 'geoUnknownUnits' && UNIT_METERS[spec.units]) return spec.units;
  const map = UNIT_METERS[spec.mapUnits] && spec.mapUnits !== 'geoDecimalDegrees' ? spec.mapUnits : 'geoMeters';
  if ((map === 'geoMeters' || map === 'geoKilometers') && groundMeters >= 1000) return 'geoKilometers';
  if (map === 'geoMeters' || map === 'geoKilometers') return 'geoMeters';
  if ((map === 'geoFeet' || map === 'geoMiles' || map === 'geoYards') && groundMeters >= 1609.344) return 'geoMiles';
  if (map === 'geoMiles') return 'geoFeet';
  return map;
}

/** The round values 1, 2, 2.5, 5 x 10^k, descending, at most `max`. */
function roundAtMost(max: number): number {
  if (!(max > 0) || !Number.isFinite(max)) return 0;
  let p = 10 ** Math.floor(Math.log10(max));
  for (;;) {
    for (const m of [5, 2.5, 2, 1]) if (m * p <= max * (1 + 1e-12)) return m * p;
    p /= 10;
  }
}

/** The next round value below `v`. */
function roundBelow(v: number): number {
  return roundAtMost(v * (1 - 1e-9));
}

export interface ScaleBarLayout {
  /** Pixel x of the bar's zero. */
  readonly zeroX: number;
  /** Pixel x of the bar's left end (before-zero divisions included) and its right end. */
  readonly leftX: number;
  readonly rightX: number;
  readonly pxPerUnit: number;
  readonly units: string;
  readonly division: number;
  readonly divisions: number;
  /** Ground distance of the part right of zero, in `units`. */
  readonly length: number;
  readonly barTop: number;
  readonly barHeight: number;
}

/**
 * Draws a scale bar of `spec` for map scale 1:`scale` on a `width` x `height` image at `dpi` over
 * `background`. Returns the straight RGBA pixels and the layout (tests, and what the bar says).
 */
export function drawScaleBar(
  spec: ScaleBarSpec,
  scale: number,
  width: number,
  height: number,
  dpi: number,
  background: Rgba,
): { rgba: Uint8ClampedArray; layout: ScaleBarLayout } {
  const pxPerPt = dpi / 72;
  const groundPerPx = (scale * METERS_PER_INCH) / dpi;
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  if (background[3] > 0) {
    ctx.fillStyle = css(background);
    ctx.fillRect(0, 0, width, height);
  }
  const labelFont = fontOf(spec.labelStyle, pxPerPt);
  const unitFont = fontOf(spec.unitLabelStyle, pxPerPt);
  const measure = (text: string, font: string): number => {
    ctx.font = font;
    return ctx.measureText(text).width;
  };
  const n = Math.max(1, Math.round(spec.divisions));
  const before = Math.max(0, Math.round(spec.divisionsBeforeZero));
  const margin = 2;
  // First guess: the whole width.
  const units0 = barUnits(spec, groundPerPx * width);
  let units = units0;
  let pxPerUnit = UNIT_METERS[units]! / groundPerPx;
  const unitText = (u: string): string => spec.unitLabel ?? UNIT_LABELS[u] ?? '';
  const labelsOn = spec.labelFrequency !== 'geoScaleBarNone';
  const layoutFor = (d: number) => {
    const unitW = unitText(units) ? measure(unitText(units), unitFont) + spec.unitLabelGap * pxPerPt : 0;
    const unitSide = spec.unitLabelPosition === 'geoScaleBarAfterBar' || spec.unitLabelPosition === 'geoScaleBarAfterLabels';
    const unitBefore = spec.unitLabelPosition === 'geoScaleBarBeforeBar' || spec.unitLabelPosition === 'geoScaleBarBeforeLabels';
    const firstW = labelsOn ? measure(formatNumber(before > 0 ? before * d : 0, spec.numberFormat), labelFont) : 0;
    const lastW = labelsOn ? measure(formatNumber(n * d, spec.numberFormat), labelFont) : 0;
    const left = margin + Math.max(firstW / 2, spec.outlineWidth * pxPerPt) + (unitBefore ? unitW : 0);
    const right = margin + Math.max(lastW / 2, spec.outlineWidth * pxPerPt) + (unitSide ? unitW : 0);
    return { left, right, fits: left + (n + before) * d * pxPerUnit + right <= width };
  };
  let division: number;
  if (spec.resizeHint === 'geoScaleBarFixed' && spec.division && spec.division > 0) {
    division = spec.division;
  } else {
    // Decision: AutoDivision and AutoDivisions both keep the division count and pick a round division value.
    division = roundAtMost((width - 2 * margin) / ((n + before) * pxPerUnit));
    // A bar shorter than one unit of km/miles: fall back to metres/feet.
    if (division < 1 && (units === 'geoKilometers' || units === 'geoMiles') && !spec.units) {
      units = units === 'geoKilometers' ? 'geoMeters' : 'geoFeet';
      pxPerUnit = UNIT_METERS[units]! / groundPerPx;
      division = roundAtMost((width - 2 * margin) / ((n + before) * pxPerUnit));
    }
    while (division > 0 && !layoutFor(division).fits) division = roundBelow(division);
  }
  const { left } = layoutFor(division);
  const divPx = division * pxPerUnit;
  const leftX = left;
  const zeroX = leftX + before * divPx;
  const rightX = zeroX + n * divPx;
  const barH = spec.barHeight * pxPerPt;
  const labelH = spec.labelStyle.size * pxPerPt;
  const gap = spec.labelGap * pxPerPt;
  // Vertical layout: labels above or below the bar (on/top/bottom: inside the bar's band).
  const above = spec.labelPosition === 'geoAbove';
  const below = spec.labelPosition === 'geoBelow';
  const contentH = barH + (labelsOn && (above || below) ? labelH + gap : 0);
  const top = Math.max(0, (height - contentH) / 2);
  const barTop = above && labelsOn ? top + labelH + gap : top;

  // The bar.
  const outlineW = spec.outlineWidth * pxPerPt;
  const seg = (x0: number, x1: number, color: Rgba): void => {
    ctx.fillStyle = css(color);
    ctx.fillRect(x0, barTop, x1 - x0, barH);
  };
  const subs = Math.max(0, Math.round(spec.subdivisions));
  if (spec.kind === 'alternating') {
    let k = 0;
    for (let i = 0; i < before; i++) {
      const x0 = leftX + i * divPx;
      const parts = i === before - 1 && subs > 1 ? subs : 1;
      for (let s = 0; s < parts; s++)
        seg(x0 + (s * divPx) / parts, x0 + ((s + 1) * divPx) / parts, k++ % 2 === 0 ? spec.fill1 : spec.fill2);
    }
    for (let i = 0; i < n; i++) {
      const x0 = zeroX + i * divPx;
      const parts = i === 0 && subs > 1 && before === 0 ? subs : 1;
      for (let s = 0; s < parts; s++)
        seg(x0 + (s * divPx) / parts, x0 + ((s + 1) * divPx) / parts, k++ % 2 === 0 ? spec.fill1 : spec.fill2);
    }
  } else {
    seg(leftX, rightX, spec.fill1);
  }
  if (outlineW > 0 && spec.outline[3] > 0) {
    ctx.strokeStyle = css(spec.outline);
    ctx.lineWidth = outlineW;
    ctx.strokeRect(leftX, barTop, rightX - leftX, barH);
    ctx.beginPath();
    for (let i = 1; i < n + before; i++) {
      const x = leftX + i * divPx;
      ctx.moveTo(x, barTop);
      ctx.lineTo(x, barTop + barH);
    }
    ctx.stroke();
  }

  // Division and subdivision marks.
  const marks = spec.marks;
  if (marks && marks.frequency !== 'geoScaleBarNone' && (marks.divisionHeight > 0 || marks.subdivisionHeight > 0)) {
    ctx.strokeStyle = css(marks.color);
    ctx.lineWidth = Math.max(0.5, marks.width * pxPerPt);
    ctx.setLineDash([]);
    const tick = (x: number, heightPt: number): void => {
      const h = heightPt * pxPerPt;
      if (!(h > 0)) return;
      const [y0, y1] =
        marks.position === 'geoAbove'
          ? [barTop - h, barTop]
          : marks.position === 'geoBelow'
            ? [barTop + barH, barTop + barH + h]
            : marks.position === 'geoTop'
              ? [barTop, barTop + h]
              : marks.position === 'geoBottom'
                ? [barTop + barH - h, barTop + barH]
                : [barTop + barH / 2 - h / 2, barTop + barH / 2 + h / 2];
      ctx.beginPath();
      ctx.moveTo(x, y0);
      ctx.lineTo(x, y1);
      ctx.stroke();
    };
    const f = marks.frequency;
    if (f === 'geoScaleBarOne') tick(rightX, marks.divisionHeight);
    else {
      const step = f === 'geoScaleBarMajorDivisions' ? Math.max(1, Math.floor(n / 2)) : 1;
      for (let i = -before; i <= n; i++) if (i % step === 0 || i === n || i < 0) tick(zeroX + i * divPx, marks.divisionHeight);
      const subDivs = f === 'geoScaleBarDivisionsAndSubdivisions' ? n : f === 'geoScaleBarDivisionsAndFirstSubdivisions' ? 1 : 0;
      if (subs > 1)
        for (let i = 0; i < subDivs; i++) for (let k = 1; k < subs; k++) tick(zeroX + (i + k / subs) * divPx, marks.subdivisionHeight);
      if (f === 'geoScaleBarDivisionsAndFirstMidpoint') tick(zeroX + divPx / 2, marks.subdivisionHeight || marks.divisionHeight / 2);
    }
  }

  // Labels.
  const labelY = above ? barTop - gap : below ? barTop + barH + gap : barTop + barH / 2;
  ctx.textBaseline = above ? 'bottom' : below ? 'top' : 'middle';
  ctx.textAlign = 'center';
  ctx.font = labelFont;
  ctx.fillStyle = css(spec.labelStyle.color);
  const label = (x: number, v: number): void => ctx.fillText(formatNumber(v, spec.numberFormat), x, labelY);
  if (labelsOn) {
    const f = spec.labelFrequency;
    if (f === 'geoScaleBarOne') label(rightX, n * division);
    else {
      for (let i = before; i >= 1; i--) label(zeroX - i * divPx, i * division);
      const step = f === 'geoScaleBarMajorDivisions' ? Math.max(1, Math.floor(n / 2)) : 1;
      for (let i = 0; i <= n; i++) if (i % step === 0 || i === n) label(zeroX + i * divPx, i * division);
      if (f === 'geoScaleBarDivisionsAndFirstMidpoint') label(zeroX + divPx / 2, division / 2);
      if ((f === 'geoScaleBarDivisionsAndFirstSubdivisions' || f === 'geoScaleBarDivisionsAndSubdivisions') && subs > 1) {
        const lastDiv = f === 'geoScaleBarDivisionsAndSubdivisions' ? n : 1;
        for (let i = 0; i < lastDiv; i++) for (let s = 1; s < subs; s++) label(zeroX + (i + s / subs) * divPx, (i + s / subs) * division);
      }
    }
  }
  // The unit label.
  const ut = unitText(units);
  if (ut) {
    drawUnitLabel(ctx, spec, ut, unitFont, {
      leftX,
      rightX,
      barTop,
      barH,
      labelY,
      labelH,
      lastLabelW: labelsOn ? measure(formatNumber(n * division, spec.numberFormat), labelFont) : 0,
      firstLabelW: labelsOn ? measure(formatNumber(before * division, spec.numberFormat), labelFont) : 0,
      pxPerPt,
      labelBaseline: above ? 'bottom' : below ? 'top' : 'middle',
    });
  }
  const rgba = ctx.getImageData(0, 0, width, height).data;
  return {
    rgba,
    layout: { zeroX, leftX, rightX, pxPerUnit, units, division, divisions: n, length: n * division, barTop, barHeight: barH },
  };
}

function drawUnitLabel(
  ctx: SKRSContext2D,
  spec: ScaleBarSpec,
  text: string,
  font: string,
  g: {
    leftX: number;
    rightX: number;
    barTop: number;
    barH: number;
    labelY: number;
    labelH: number;
    lastLabelW: number;
    firstLabelW: number;
    pxPerPt: number;
    labelBaseline: 'bottom' | 'top' | 'middle';
  },
): void {
  const gap = spec.unitLabelGap * g.pxPerPt;
  ctx.font = font;
  ctx.fillStyle = css(spec.unitLabelStyle.color);
  const mid = g.barTop + g.barH / 2;
  switch (spec.unitLabelPosition) {
    case 'geoScaleBarAbove':
      ctx.textAlign = 'center';
      ctx.textBaseline = 'bottom';
      ctx.fillText(text, (g.leftX + g.rightX) / 2, Math.min(g.barTop, g.labelY - g.labelH) - gap);
      return;
    case 'geoScaleBarBelow':
      ctx.textAlign = 'center';
      ctx.textBaseline = 'top';
      ctx.fillText(text, (g.leftX + g.rightX) / 2, Math.max(g.barTop + g.barH, g.labelY + g.labelH) + gap);
      return;
    case 'geoScaleBarBeforeBar':
    case 'geoScaleBarBeforeLabels':
      ctx.textAlign = 'right';
      ctx.textBaseline = spec.unitLabelPosition === 'geoScaleBarBeforeLabels' ? g.labelBaseline : 'middle';
      ctx.fillText(
        text,
        g.leftX - gap - (spec.unitLabelPosition === 'geoScaleBarBeforeLabels' ? g.firstLabelW / 2 : 0),
        spec.unitLabelPosition === 'geoScaleBarBeforeLabels' ? g.labelY : mid,
      );
      return;
    default:
      ctx.textAlign = 'left';
      ctx.textBaseline = spec.unitLabelPosition === 'geoScaleBarAfterLabels' ? g.labelBaseline : 'middle';
      ctx.fillText(
        text,
        g.rightX + gap + (spec.unitLabelPosition === 'geoScaleBarAfterLabels' ? g.lastLabelW / 2 : 0),
        spec.unitLabelPosition === 'geoScaleBarAfterLabels' ? g.labelY : mid,
      );
  }
}

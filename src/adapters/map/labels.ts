/**
 * Feature labels (LayerDescription ShowLabels, FeatureLayerDrawingDescription LabelingDescription):
 * the text of a label expression per feature, where to put it, and placement without overlaps.
 *
 * - Expressions: `[FIELD]` (the vendor's VBScript/JScript form), `$feature.FIELD` and
 *   `$feature["FIELD"]` (Arcade) and `!FIELD!` (Python), joined with `&` or `+` to quoted strings
 *   (`[NAME] & " (" & [ELEV] & " m)"`). Decision: no other functions are evaluated; an unquoted
 *   part that is not a field reference is written as it is.
 * - Anchors: points above their point; lines at the middle of their longest part; polygons at an
 *   inside point (the middle of the widest horizontal run inside, found on a few scanlines).
 * - Placement: labels are placed in priority order (layer 0 first, then the features in store
 *   order); one that would overlap a placed label (or leave the image) is not drawn, as the
 *   vendor's label engine drops conflicting labels.
 */
import type { SKRSContext2D } from '@napi-rs/canvas';
import type { AttributeValue, Geometry } from './model.js';
import { fontOf, type TextStyle } from './scale-bar.js';
import { css, type ToScreen } from './symbols.js';

export interface LabelClass {
  readonly expression: string;
  readonly style: TextStyle;
  /** Only features matching this where clause (with the layer's definition expression). */
  readonly where?: string;
  /** Scale range of the class (0 = no limit), as layers' minScale/maxScale. */
  readonly minScale: number;
  readonly maxScale: number;
}

export interface LabelJob {
  readonly text: string;
  readonly x: number;
  readonly y: number;
  /** 'above' a point, 'center' on lines and areas. */
  readonly at: 'above' | 'center';
  readonly style: TextStyle;
}

const FIELD_REF = /\[([^\]]+)\]|\$feature\.(\w+)|\$feature\[\s*["']([^"']+)["']\s*\]|!(\w+)!/g;

/** The fields an expression reads. */
export function expressionFields(expression: string): string[] {
  const out = new Set<string>();
  for (const m of expression.matchAll(FIELD_REF)) out.add((m[1] ?? m[2] ?? m[3] ?? m[4])!);
  return [...out];
}

function valueOf(attributes: Readonly<Record<string, AttributeValue>>, field: string): string {
  let v: AttributeValue | undefined = attributes[field];
  if (v === undefined) {
    const lower = field.toLowerCase();
    const k = Object.keys(attributes).find((a) => a.toLowerCase() === lower);
    v = k === undefined ? undefined : attributes[k];
  }
  if (v === null || v === undefined) return '';
  if (v instanceof Date) return v.toISOString().slice(0, 10);
  return String(v);
}

/** The text of `expression` for a feature. */
export function labelText(expression: string, attributes: Readonly<Record<string, AttributeValue>>): string {
  // Split on & / + outside quotes.
  const parts: string[] = [];
  let cur = '';
  let quote: string | undefined;
  for (const ch of expression) {
    if (quote) {
      cur += ch;
      if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      cur += ch;
    } else if (ch === '&' || ch === '+') {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return parts
    .map((p) => {
      const t = p.trim();
      if (t.length >= 2 && (t[0] === '"' || t[0] === "'") && t[t.length - 1] === t[0]) return t.slice(1, -1);
      return t.replace(FIELD_REF, (_m, a?: string, b?: string, c?: string, d?: string) => valueOf(attributes, (a ?? b ?? c ?? d)!));
    })
    .join('');
}

/** Where a geometry's label goes, in map coordinates; undefined for an empty geometry. */
export function labelAnchor(g: Geometry): { x: number; y: number; at: 'above' | 'center' } | undefined {
  switch (g.type) {
    case 'Point':
      return { x: g.coordinates[0]!, y: g.coordinates[1]!, at: 'above' };
    case 'MultiPoint': {
      const c = g.coordinates[0];
      return c ? { x: c[0]!, y: c[1]!, at: 'above' } : undefined;
    }
    case 'LineString':
    case 'MultiLineString': {
      const lines = g.type === 'LineString' ? [g.coordinates] : g.coordinates;
      let best: { x: number; y: number } | undefined;
      let longest = -1;
      for (const l of lines) {
        let len = 0;
        for (let i = 1; i < l.length; i++) len += Math.hypot(l[i]![0]! - l[i - 1]![0]!, l[i]![1]! - l[i - 1]![1]!);
        if (len <= longest) continue;
        longest = len;
        // the point half way along
        let acc = 0;
        for (let i = 1; i < l.length; i++) {
          const seg = Math.hypot(l[i]![0]! - l[i - 1]![0]!, l[i]![1]! - l[i - 1]![1]!);
          if (acc + seg >= len / 2 && seg > 0) {
            const t = (len / 2 - acc) / seg;
            best = { x: l[i - 1]![0]! + t * (l[i]![0]! - l[i - 1]![0]!), y: l[i - 1]![1]! + t * (l[i]![1]! - l[i - 1]![1]!) };
            break;
          }
          acc += seg;
        }
        if (!best && l[0]) best = { x: l[0][0]!, y: l[0][1]! };
      }
      return best ? { ...best, at: 'center' } : undefined;
    }
    case 'Polygon':
    case 'MultiPolygon': {
      const polys = g.type === 'Polygon' ? [g.coordinates] : g.coordinates;
      const edges: [number, number, number, number][] = [];
      for (const poly of polys)
        for (const ring of poly)
          for (let i = 1; i < ring.length; i++) edges.push([ring[i - 1]![0]!, ring[i - 1]![1]!, ring[i]![0]!, ring[i]![1]!]);
      if (edges.length === 0) return undefined;
      let ymin = Infinity;
      let ymax = -Infinity;
      for (const e of edges) {
        ymin = Math.min(ymin, e[1], e[3]);
        ymax = Math.max(ymax, e[1], e[3]);
      }
      let best: { x: number; y: number; w: number } | undefined;
      for (let k = 1; k < 8; k++) {
        const y = ymin + ((ymax - ymin) * k) / 8;
        const xs: number[] = [];
        for (const [x0, y0, x1, y1] of edges) if (y0 <= y !== y1 <= y) xs.push(x0 + ((y - y0) * (x1 - x0)) / (y1 - y0));
        xs.sort((a, b) => a - b);
        for (let i = 0; i + 1 < xs.length; i += 2) {
          const w = xs[i + 1]! - xs[i]!;
          // prefer the middle scanlines when runs are as wide
          const score = w * (1 - Math.abs(k - 4) / 16);
          if (!best || score > best.w) best = { x: (xs[i]! + xs[i + 1]!) / 2, y, w: score };
        }
      }
      return best ? { x: best.x, y: best.y, at: 'center' } : undefined;
    }
  }
}

/** Draws `jobs` in order, skipping those that overlap a placed label or leave the image. Returns how many were drawn. */
export function placeLabels(
  ctx: SKRSContext2D,
  jobs: readonly LabelJob[],
  toScreen: ToScreen,
  width: number,
  height: number,
  pxPerPt: number,
): number {
  const placed: [number, number, number, number][] = [];
  let drawn = 0;
  for (const j of jobs) {
    if (j.text.trim() === '') continue;
    const [sx, sy] = toScreen(j.x, j.y);
    if (!Number.isFinite(sx) || !Number.isFinite(sy)) continue;
    ctx.font = fontOf(j.style, pxPerPt);
    const w = ctx.measureText(j.text).width;
    const h = j.style.size * pxPerPt;
    const x0 = sx - w / 2;
    const y0 = j.at === 'above' ? sy - 3 * pxPerPt - h : sy - h / 2;
    const box: [number, number, number, number] = [x0, y0, x0 + w, y0 + h];
    if (box[0] < 0 || box[1] < 0 || box[2] > width || box[3] > height) continue;
    if (placed.some((b) => b[0] < box[2] && box[0] < b[2] && b[1] < box[3] && box[1] < b[3])) continue;
    placed.push(box);
    ctx.fillStyle = css(j.style.color);
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillText(j.text, sx, y0 + h / 2);
    drawn++;
  }
  return drawn;
}

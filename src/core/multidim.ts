/**
 * The multidimensional raster model: a raster with named variables, each with dimensions
 * (`StdTime`, `StdZ`, ...) and one slice per combination of dimension values.
 *
 * Representation [ours]: a multidimensional raster is an ordinary multi-band raster whose
 * `RasterInfo.multidimensional` says which bands hold which slice. Variable v's slice s occupies
 * the `bandsPerSlice` consecutive bands starting at `slices[s].band` (a slice of a Landsat time
 * series has 6 bands; a slice of a temperature cube has 1). So per-band functions work on slices
 * unchanged, and functions that keep the band layout (they spread their input's info) keep the
 * metadata. `multidimOf(info)` returns the metadata only while it still fits the band count.
 *
 * Dimension values are numbers: time dimensions hold epoch milliseconds (UTC), parsed from and
 * printed as ISO 8601 (`parseDimensionValue`, `formatDimensionValue`); other dimensions hold their
 * own values (depth in metres, pressure level...).
 *
 * Per-slice NoData [ours]: the engine's mask is shared by all bands, but a time series needs to
 * say "this date is cloudy here" without losing the other dates. So in a multidimensional raster
 * the mask is 1 where ANY slice is valid, and a slice value is missing when it is NaN or equals
 * `info.noData` (`sliceValueMissing`). Sources fill missing slice pixels so (integer slices with a
 * common NoData value keep their type; others become F32/F64 with NaN).
 *
 * MatchVariable / UnionDimension (seed spec section 8 rule 6) for functions with several inputs:
 * `pairMultidimensional` (below), and `pairSlices` for functions that read whole slices.
 */
import { invalidArgument } from './errors.js';
import type { RasterInfo } from './pixel-block.js';

export interface MultidimDimension {
  /** `StdTime`, `StdZ`, `time`, `depth`, ... */
  readonly name: string;
  /** Values are epoch milliseconds (UTC), shown as ISO 8601. */
  readonly time: boolean;
  /** Unit of non-time values, when known (`m`, `hPa`). */
  readonly unit?: string;
}

export interface MultidimSlice {
  /** One value per dimension of the variable, in `dimensions` order. */
  readonly values: readonly number[];
  /** 0-based index of the slice's first band. */
  readonly band: number;
}

export interface MultidimVariable {
  readonly name: string;
  readonly description?: string;
  readonly dimensions: readonly MultidimDimension[];
  /** Bands of every slice (6 for a Landsat time series, 1 for a temperature cube). */
  readonly bandsPerSlice: number;
  readonly slices: readonly MultidimSlice[];
}

/** The fitted model a trend or change-analysis raster holds, for the functions that read it. */
export type ChangeModel = TrendModel | CcdcModel;

/** TrendAnalysis output: per variable one slice of coefficient bands (see trend.ts in functions/change). */
export interface TrendModel {
  readonly kind: 'trend';
  /** 0 linear, 1 harmonic, 2 polynomial, 3 Mann-Kendall, 4 Seasonal-Kendall (no model to evaluate: Sen's slope and test bands). */
  readonly regression: 0 | 1 | 2 | 3 | 4;
  readonly frequency: number;
  readonly order: number;
  /** Name of the dimension the trend runs along and whether it is a time dimension. */
  readonly dimension: MultidimDimension;
  /** Harmonic period in units of t (days for time dimensions). */
  readonly cycle: number;
  /** Coefficient bands of one fit (then RMSE/R2/p-value bands). */
  readonly coefficients: number;
  /** Bands of one fit: coefficients plus the requested RMSE/R2/p-value bands. */
  readonly bandsPerFit: number;
}

/** CCDC output: per pixel up to `maxSegments` segments (see ccdc.ts in functions/change). */
export interface CcdcModel {
  readonly kind: 'ccdc';
  /** Input band ids (0-based, within a slice) used for change detection, in output order. */
  readonly changeBands: readonly number[];
  readonly maxSegments: number;
  /** Bands per segment slice. */
  readonly bandsPerSegment: number;
}

export interface Multidimensional {
  readonly variables: readonly MultidimVariable[];
  readonly model?: ChangeModel;
}

/** The canonical name of the time dimension. */
export const STD_TIME = 'StdTime';

/** Names that mean a time dimension (case-insensitive). */
export const isTimeDimensionName = (name: string): boolean => /^(stdtime|time|date|t)$/i.test(name.trim());

/** The metadata of `info` when it is multidimensional and still fits its band count, else undefined. */
export function multidimOf(info: RasterInfo): Multidimensional | undefined {
  const md = info.multidimensional;
  if (md === undefined || md.variables.length === 0) return undefined;
  const used = new Uint8Array(info.bandCount);
  for (const v of md.variables) {
    if (!(v.bandsPerSlice >= 1) || v.slices.length === 0) return undefined;
    for (const s of v.slices) {
      if (s.values.length !== v.dimensions.length) return undefined;
      for (let j = 0; j < v.bandsPerSlice; j++) {
        const b = s.band + j;
        if (!(b >= 0 && b < info.bandCount) || used[b]) return undefined;
        used[b] = 1;
      }
    }
  }
  return md;
}

/** Whether a slice value is missing (NaN, or the raster's NoData value). */
export const sliceValueMissing = (v: number, noData: number | undefined): boolean => v !== v || v === noData;

/** A time series layout: one variable, dimension `StdTime` (or `dimension`), slices of `bandsPerSlice` bands in order. */
export function timeSeriesMultidim(
  name: string,
  times: readonly (number | string)[],
  bandsPerSlice = 1,
  dimension: MultidimDimension = { name: STD_TIME, time: true },
): Multidimensional {
  const slices = times.map((t, s) => ({
    values: [typeof t === 'string' ? parseDimensionValue(t, dimension.time) : t],
    band: s * bandsPerSlice,
  }));
  return { variables: [{ name, dimensions: [dimension], bandsPerSlice, slices }] };
}

// ---- Dimension values

const ISO = /^([+-]?\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * A dimension value from text: for time dimensions an ISO 8601 date or date-time (`2001`,
 * `2001-05`, `2001-05-17`, `2001-05-17T10:30:00`, with `Z` or an offset; no zone means UTC) or a
 * number of epoch milliseconds; for other dimensions a number. NaN when unreadable.
 */
export function parseDimensionValue(text: string | number, time: boolean): number {
  if (typeof text === 'number') return text;
  const s = text.trim();
  if (!time) return s === '' ? Number.NaN : Number(s);
  const m = ISO.exec(s);
  if (!m) return /^[+-]?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(s) && s.length > 6 ? Number(s) : Number.NaN;
  const [, y, mo, d, h, mi, se, frac, zone] = m;
  const month = mo === undefined ? 1 : Number(mo);
  const day = d === undefined ? 1 : Number(d);
  if (month < 1 || month > 12 || day < 1 || day > 31) return Number.NaN;
  let ms = Date.UTC(
    Number(y),
    month - 1,
    day,
    Number(h ?? 0),
    Number(mi ?? 0),
    Number(se ?? 0),
    frac ? Math.round(Number(frac) * 1000) : 0,
  );
  // Date.UTC maps years 0..99 to 1900..1999; set the year exactly.
  const dt = new Date(ms);
  dt.setUTCFullYear(Number(y));
  ms = dt.getTime();
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.replace(/[+:-]/g, '');
    ms -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60000;
  }
  return ms;
}

/** ISO 8601 (UTC, seconds) for time values, the number otherwise. */
export function formatDimensionValue(v: number, time: boolean): string {
  if (!time) return String(v);
  if (!Number.isFinite(v)) return String(v);
  const iso = new Date(v).toISOString();
  return iso.endsWith('.000Z') ? iso.slice(0, 19) : iso.slice(0, 23);
}

const MS_PER_DAY = 86_400_000;
/** Days since 1970-01-01T00:00:00Z: the regression variable t of time dimensions. */
export const daysSinceEpoch = (ms: number): number => ms / MS_PER_DAY;

/** Decimal year of an epoch-ms instant (2001.5 is mid-2001), UTC calendar. */
export function decimalYear(ms: number): number {
  const y = new Date(ms).getUTCFullYear();
  const start = Date.UTC(y, 0, 1);
  const end = Date.UTC(y + 1, 0, 1);
  return y + (ms - start) / (end - start);
}

/** Epoch ms of a decimal year. */
export function fromDecimalYear(dy: number): number {
  const y = Math.floor(dy);
  const start = Date.UTC(y, 0, 1);
  return start + (dy - y) * (Date.UTC(y + 1, 0, 1) - start);
}

/** A band name for band j of a slice: `temp_StdTime=2001-01-01T00:00:00` (`_Band_2` added when slices have several bands). */
export function sliceBandName(v: MultidimVariable, s: MultidimSlice, j: number): string {
  const dims = v.dimensions.map((d, i) => `${d.name}=${formatDimensionValue(s.values[i]!, d.time)}`).join('_');
  return `${v.name}${dims ? `_${dims}` : ''}${v.bandsPerSlice > 1 ? `_Band_${j + 1}` : ''}`;
}

/** Band names of a whole layout (`sliceBandName` for every band; `Band_n` for bands no slice uses). */
export function layoutBandNames(md: Multidimensional, bandCount: number): string[] {
  const names = Array.from({ length: bandCount }, (_, b) => `Band_${b + 1}`);
  for (const v of md.variables)
    for (const s of v.slices) for (let j = 0; j < v.bandsPerSlice; j++) names[s.band + j] = sliceBandName(v, s, j);
  return names;
}

// ---- MatchVariable / UnionDimension

export interface PairOptions {
  /** Seed rule 6: true (default) = proceed only if variables have the same name (pair by name). */
  readonly matchVariable: boolean;
  /** Seed rule 6: true (default) = proceed only if dimensions have the same names; false = union of dimensions. */
  readonly unionDimension: boolean;
  /**
   * The function's argument paths (`argPaths(args)` of graph/args.ts), for errors at MatchVariable
   * and UnionDimension: a function whose schema lacks either does not compile.
   */
  readonly at: (name: 'MatchVariable' | 'UnionDimension') => string;
  /** The path of each input for errors, one per input (`at('Raster2')`, `at('Rasters', 1)`); messages name it by its last part. */
  readonly paths: readonly string[];
}

export interface MultidimPairing {
  /** Output bands. */
  readonly bandCount: number;
  /** `bands[i][b]`: the band of input i that output band b reads (constants: the index of their value). */
  readonly bands: readonly (readonly number[])[];
  /** Layout of the output (put it on the output info as `multidimensional`). */
  readonly multidimensional: Multidimensional;
  /** Output band names (`sliceBandName`). */
  readonly bandNames: readonly string[];
  /** Variables or slices left out because not every input has them. */
  readonly warnings: readonly string[];
}

interface Member {
  readonly input: number;
  readonly variable: MultidimVariable;
}

const key = (s: string): string => s.trim().toLowerCase();

/**
 * Pair the bands of several inputs when at least one is multidimensional (undefined when none is:
 * the function keeps its usual band rules). Plain inputs and constants are broadcast over every
 * slice: one band (or value) to every band, `bandsPerSlice` bands to the bands of each slice, or
 * as many bands as the output has band for band.
 *
 * Several multidimensional inputs (seed spec section 8 rule 6, both flags default true):
 * - Variables. MatchVariable true: variables are paired by name (case-insensitive); the output has
 *   the variables every input has (in the first input's order); none in common is an
 *   INVALID_ARGUMENT at `MatchVariable`. MatchVariable false: names need not match; variables are
 *   paired by position (equal counts, or an input with one variable pairs with every variable),
 *   and the output variable takes the first input's name.
 * - Dimensions. UnionDimension true: the paired variables must have the same dimension names, else
 *   INVALID_ARGUMENT at `UnionDimension`. UnionDimension false: the output variable has the union
 *   of the dimensions (first input's, then new ones in input order), and one slice per
 *   combination of input slices that agree on the dimensions they share (a time series plus a
 *   depth profile gives every (time, depth)).
 * - Slices are paired by equal values of shared dimensions; slices not in every input are left
 *   out with a warning; no slice in common is an INVALID_ARGUMENT at the second input.
 * - Bands per slice must be equal, or 1 (broadcast).
 */
export function pairMultidimensional(inputs: readonly RasterInfo[], o: PairOptions): MultidimPairing | undefined {
  const mds = inputs.map((i) => (i.constant === undefined ? multidimOf(i) : undefined));
  const multi = mds.flatMap((m, i) => (m ? [i] : []));
  if (multi.length === 0) return undefined;
  const where = (i: number): string => o.paths[i]!;
  const label = (i: number): string => where(i).slice(where(i).lastIndexOf('.') + 1);
  const warnings: string[] = [];

  // 1. Variable groups: one variable per multidimensional input.
  const groups: Member[][] = [];
  const first = mds[multi[0]!]!;
  if (multi.length === 1) {
    for (const v of first.variables) groups.push([{ input: multi[0]!, variable: v }]);
  } else if (o.matchVariable) {
    for (const v of first.variables) {
      const members: Member[] = [];
      for (const i of multi) {
        const match = mds[i]!.variables.find((w) => key(w.name) === key(v.name));
        if (match) members.push({ input: i, variable: match });
      }
      if (members.length === multi.length) groups.push(members);
    }
    if (groups.length === 0) {
      const lists = multi.map((i) => `${label(i)} has ${mds[i]!.variables.map((v) => v.name).join(', ')}`).join('; ');
      throw invalidArgument(
        o.at('MatchVariable'),
        `MatchVariable is true but the inputs share no variable name (${lists}); set MatchVariable to false to pair variables by position`,
      );
    }
    const all = new Set(multi.flatMap((i) => mds[i]!.variables.map((v) => key(v.name))));
    if (all.size > groups.length)
      warnings.push(`variables not in every input are left out (kept: ${groups.map((g) => g[0]!.variable.name).join(', ')})`);
  } else {
    const counts = multi.map((i) => mds[i]!.variables.length);
    const n = Math.max(...counts);
    const bad = multi.find((i) => mds[i]!.variables.length !== n && mds[i]!.variables.length !== 1);
    if (bad !== undefined) {
      throw invalidArgument(
        where(bad),
        `with MatchVariable false variables are paired by position, but the inputs have ${counts.join(', ')} variables (need equal counts or one)`,
      );
    }
    for (let k = 0; k < n; k++)
      groups.push(multi.map((i) => ({ input: i, variable: mds[i]!.variables[mds[i]!.variables.length === 1 ? 0 : k]! })));
  }

  // 2. Per group: dimensions, joined slices, bands per slice.
  const variables: MultidimVariable[] = [];
  const sources: { members: Member[]; slices: (readonly MultidimSlice[])[]; bandsPerSlice: number }[] = [];
  let band = 0;
  for (const members of groups) {
    const lead = members[0]!.variable;
    const dims: MultidimDimension[] = [...lead.dimensions];
    for (const m of members.slice(1)) {
      const names = m.variable.dimensions.map((d) => key(d.name));
      const have = dims.map((d) => key(d.name));
      const same = names.length === have.length && names.every((n) => have.includes(n));
      if (!same && o.unionDimension) {
        throw invalidArgument(
          o.at('UnionDimension'),
          `UnionDimension is true but the dimensions of variable ${lead.name} differ (${lead.dimensions.map((d) => d.name).join(', ') || 'none'} vs ${m.variable.dimensions.map((d) => d.name).join(', ') || 'none'}); set UnionDimension to false for the union of dimensions`,
        );
      }
      for (const d of m.variable.dimensions) if (!dims.some((e) => key(e.name) === key(d.name))) dims.push(d);
    }
    const bps = Math.max(...members.map((m) => m.variable.bandsPerSlice));
    for (const m of members) {
      if (m.variable.bandsPerSlice !== bps && m.variable.bandsPerSlice !== 1) {
        throw invalidArgument(
          where(m.input),
          `slices of variable ${m.variable.name} have ${m.variable.bandsPerSlice} bands where another input's have ${bps}`,
        );
      }
    }
    // Natural join of the members' slices on the dimensions they share.
    const position = members.map((m) => m.variable.dimensions.map((d) => dims.findIndex((e) => key(e.name) === key(d.name))));
    let rows: { values: number[]; picks: MultidimSlice[] }[] = [{ values: dims.map(() => Number.NaN), picks: [] }];
    members.forEach((m, k) => {
      const next: typeof rows = [];
      for (const r of rows) {
        for (const s of m.variable.slices) {
          let ok = true;
          const values = r.values.slice();
          position[k]!.forEach((p, j) => {
            const v = s.values[j]!;
            if (values[p] !== values[p]) values[p] = v;
            else if (values[p] !== v) ok = false;
          });
          if (ok) next.push({ values, picks: [...r.picks, s] });
        }
      }
      rows = next;
    });
    if (rows.length === 0) {
      throw invalidArgument(
        where(members[1]?.input ?? members[0]!.input),
        `the inputs' slices of variable ${lead.name} have no dimension values in common`,
      );
    }
    const most = Math.max(...members.map((m) => m.variable.slices.length));
    if (members.length > 1 && rows.length < most && dims.length === lead.dimensions.length) {
      warnings.push(`variable ${lead.name}: slices not in every input are left out (${rows.length} kept)`);
    }
    const slices = rows.map((r) => {
      const s = { values: r.values, band };
      band += bps;
      return s;
    });
    variables.push({
      name: lead.name,
      ...(lead.description ? { description: lead.description } : {}),
      dimensions: dims,
      bandsPerSlice: bps,
      slices,
    });
    sources.push({ members, slices: rows.map((r) => r.picks), bandsPerSlice: bps });
  }
  const bandCount = band;

  // 3. Band of each input for each output band.
  const bands = inputs.map((info, i) => {
    const out = new Array<number>(bandCount);
    const md = mds[i];
    if (md === undefined) {
      const n = info.constant !== undefined ? info.constant.length : info.bandCount;
      let b = 0;
      for (const g of sources) {
        for (let s = 0; s < g.slices.length; s++) {
          for (let j = 0; j < g.bandsPerSlice; j++, b++) {
            if (n === 1) out[b] = 0;
            else if (n === g.bandsPerSlice) out[b] = j;
            else if (n === bandCount) out[b] = b;
            else {
              throw invalidArgument(
                where(i),
                `a plain input with ${n} bands cannot be paired with multidimensional slices of ${g.bandsPerSlice} band(s) (${bandCount} bands in all): give it 1, ${g.bandsPerSlice} or ${bandCount} bands`,
              );
            }
          }
        }
      }
      return out;
    }
    let b = 0;
    for (const g of sources) {
      const k = g.members.findIndex((m) => m.input === i);
      const bps = g.members[k]!.variable.bandsPerSlice;
      for (const picks of g.slices) {
        const s = picks[k]!;
        for (let j = 0; j < g.bandsPerSlice; j++, b++) out[b] = s.band + (bps === 1 ? 0 : j);
      }
    }
    return out;
  });
  const multidimensional: Multidimensional = { variables };
  return { bandCount, bands, multidimensional, bandNames: layoutBandNames(multidimensional, bandCount), warnings };
}

/** `pairMultidimensional` at the level of whole slices (`pairSlices`). */
export interface SlicePairing {
  /** Output slices, in layout order (variables in turn, their slices in order). */
  readonly sliceCount: number;
  /** `bands[i][s]`: the bands of input i that output slice s reads (a plain input: all its bands, for every slice). */
  readonly bands: readonly (readonly (readonly number[])[])[];
  /** The output layout when output slice s has `bandsOf(s)` bands (equal within a variable), slices stacked in order. */
  layout(bandsOf: (s: number) => number): Multidimensional;
  /** Variables or slices left out because not every input has them. */
  readonly warnings: readonly string[];
}

/**
 * `pairMultidimensional` for functions whose output slice is made from WHOLE input slices of any
 * band count (CompositeBand stacks them, ArgStatistics and VectorField reduce them): the same
 * MatchVariable / UnionDimension rules, errors and warnings, but bands per slice need not agree
 * and a plain input (or constant) gives all its bands to every output slice. Undefined when no
 * input is multidimensional.
 */
export function pairSlices(inputs: readonly RasterInfo[], o: PairOptions): SlicePairing | undefined {
  const own: number[][][] = [];
  // Proxies: each slice of a multidimensional input becomes one band; a plain input one band.
  const proxies = inputs.map((info): RasterInfo => {
    const { multidimensional: _m, constant: _c, ...rest } = info;
    const md = info.constant === undefined ? multidimOf(info) : undefined;
    if (md === undefined) {
      own.push([Array.from({ length: info.constant?.length ?? info.bandCount }, (_, b) => b)]);
      return { ...rest, bandCount: 1 };
    }
    const slices: number[][] = [];
    const variables = md.variables.map((v) => ({
      ...v,
      bandsPerSlice: 1,
      slices: v.slices.map((s) => ({
        values: s.values,
        band: slices.push(Array.from({ length: v.bandsPerSlice }, (_, j) => s.band + j)) - 1,
      })),
    }));
    own.push(slices);
    return { ...rest, bandCount: slices.length, multidimensional: { variables } };
  });
  const p = pairMultidimensional(proxies, o);
  if (p === undefined) return undefined;
  return {
    sliceCount: p.bandCount,
    bands: p.bands.map((row, i) => row.map((k) => own[i]![k]!)),
    layout(bandsOf) {
      let band = 0;
      const variables = p.multidimensional.variables.map((v) => ({
        ...v,
        bandsPerSlice: bandsOf(v.slices[0]!.band),
        slices: v.slices.map((s) => {
          const out = { values: s.values, band };
          band += bandsOf(s.band);
          return out;
        }),
      }));
      return { variables };
    },
    warnings: p.warnings,
  };
}

/**
 * The time axis of a multidimensional raster as one series (CCDC, the Tmask): the variable with a
 * time dimension when there is one; several single-band variables with the same time values are
 * taken as the bands of one series (a Zarr store with one array per Landsat band). Returns the
 * times (epoch ms, ascending) and `band[t * bandsPerStep + j]`.
 */
export interface TimeSeriesLayout {
  readonly times: readonly number[];
  readonly bandsPerStep: number;
  readonly band: Int32Array;
  readonly variables: readonly string[];
}

export function timeSeriesOf(md: Multidimensional): TimeSeriesLayout | string {
  const timed = md.variables.filter((v) => v.dimensions.length === 1 && v.dimensions[0]!.time);
  if (timed.length === 0) return 'the raster has no variable whose only dimension is a time dimension (StdTime)';
  const order = (v: MultidimVariable): number[] =>
    v.slices.map((_, s) => s).sort((a, b) => v.slices[a]!.values[0]! - v.slices[b]!.values[0]!);
  const lead = timed[0]!;
  const times = order(lead).map((s) => lead.slices[s]!.values[0]!);
  const sameTimes = (v: MultidimVariable): boolean => {
    const t = order(v).map((s) => v.slices[s]!.values[0]!);
    return t.length === times.length && t.every((x, i) => x === times[i]);
  };
  const group = timed.length > 1 && timed.every((v) => v.bandsPerSlice === 1 && sameTimes(v)) ? timed : [lead];
  const bandsPerStep = group.reduce((n, v) => n + v.bandsPerSlice, 0);
  const band = new Int32Array(times.length * bandsPerStep);
  let j0 = 0;
  for (const v of group) {
    order(v).forEach((s, t) => {
      for (let j = 0; j < v.bandsPerSlice; j++) band[t * bandsPerStep + j0 + j] = v.slices[s]!.band + j;
    });
    j0 += v.bandsPerSlice;
  }
  for (let t = 1; t < times.length; t++)
    if (times[t] === times[t - 1]) return `the time series has two slices at ${formatDimensionValue(times[t]!, true)}`;
  return { times, bandsPerStep, band, variables: group.map((v) => v.name) };
}

// Hand-derived expectations for the multidimensional model and MatchVariable/UnionDimension pairing.
import { describe, expect, it } from 'vitest';
import { catchError, gridInfo } from '../../test/helpers.js';
import {
  decimalYear,
  formatDimensionValue,
  fromDecimalYear,
  multidimOf,
  pairMultidimensional,
  parseDimensionValue,
  timeSeriesMultidim,
  timeSeriesOf,
  type Multidimensional,
} from './multidim.js';
import type { RasterInfo } from './pixel-block.js';

const info = (md: Multidimensional | undefined, bandCount: number): RasterInfo =>
  gridInfo({ width: 2, height: 2, bandCount, extra: md ? { multidimensional: md } : {} });

const at = (name: string): string => `rasterFunctionArguments.${name}`;
const opts = { matchVariable: true, unionDimension: true, at, paths: [at('Raster'), at('Raster2')] };

describe('dimension values', () => {
  it('parses ISO 8601 dates as UTC epoch ms and prints them back', () => {
    expect(parseDimensionValue('2001-05-17', true)).toBe(Date.UTC(2001, 4, 17));
    expect(parseDimensionValue('2001-05-17T10:30:00', true)).toBe(Date.UTC(2001, 4, 17, 10, 30));
    expect(parseDimensionValue('2001-05-17T10:30:00+02:00', true)).toBe(Date.UTC(2001, 4, 17, 8, 30));
    expect(parseDimensionValue('2001', true)).toBe(Date.UTC(2001, 0, 1));
    expect(parseDimensionValue('2001-13-01', true)).toBeNaN();
    expect(parseDimensionValue('12.5', false)).toBe(12.5);
    expect(formatDimensionValue(Date.UTC(2050, 0, 1), true)).toBe('2050-01-01T00:00:00');
    expect(formatDimensionValue(5, false)).toBe('5');
  });

  it('decimal years: mid-year 2001 is 2001 + 181/365', () => {
    expect(decimalYear(Date.UTC(2001, 6, 1))).toBeCloseTo(2001 + 181 / 365, 12);
    expect(fromDecimalYear(decimalYear(Date.UTC(2004, 1, 29)))).toBeCloseTo(Date.UTC(2004, 1, 29), 0);
  });
});

describe('multidimOf', () => {
  it('returns the layout only while it fits the band count', () => {
    const md = timeSeriesMultidim('v', ['2001-01-01', '2002-01-01'], 3);
    expect(multidimOf(info(md, 6))).toBe(md);
    expect(multidimOf(info(md, 5))).toBeUndefined(); // e.g. ExtractBand kept the info but dropped a band
    expect(multidimOf(info(undefined, 6))).toBeUndefined();
  });
});

describe('pairMultidimensional (seed rule 6)', () => {
  const t3 = timeSeriesMultidim('temp', ['2001-01-01', '2002-01-01', '2003-01-01']);
  const t2 = timeSeriesMultidim('temp', ['2002-01-01', '2003-01-01']);

  it('undefined when no input is multidimensional', () => {
    expect(pairMultidimensional([info(undefined, 1), info(undefined, 1)], opts)).toBeUndefined();
  });

  it('pairs slices with equal dimension values (the common ones)', () => {
    const p = pairMultidimensional([info(t3, 3), info(t2, 2)], opts)!;
    expect(p.bandCount).toBe(2);
    expect(p.bands).toEqual([
      [1, 2],
      [0, 1],
    ]);
    expect(p.multidimensional.variables[0]!.slices.map((s) => s.values[0])).toEqual([Date.UTC(2002, 0, 1), Date.UTC(2003, 0, 1)]);
    expect(p.warnings.length).toBe(1);
    expect(p.bandNames[0]).toBe('temp_StdTime=2002-01-01T00:00:00');
  });

  it('broadcasts a plain single-band raster over every slice', () => {
    const p = pairMultidimensional([info(t3, 3), info(undefined, 1)], opts)!;
    expect(p.bands).toEqual([
      [0, 1, 2],
      [0, 0, 0],
    ]);
  });

  it('MatchVariable true: different names fail at MatchVariable; false pairs by position', () => {
    const other = timeSeriesMultidim('salinity', ['2002-01-01', '2003-01-01']);
    const e = catchError(() => pairMultidimensional([info(t3, 3), info(other, 2)], opts));
    expect(e?.code).toBe('INVALID_ARGUMENT');
    expect(e?.path).toBe('rasterFunctionArguments.MatchVariable');
    const p = pairMultidimensional([info(t3, 3), info(other, 2)], { ...opts, matchVariable: false })!;
    expect(p.multidimensional.variables[0]!.name).toBe('temp');
    expect(p.bandCount).toBe(2);
  });

  it('UnionDimension true: different dimension names fail; false gives the union (every time x depth)', () => {
    const depth: Multidimensional = {
      variables: [
        {
          name: 'temp',
          dimensions: [{ name: 'StdZ', time: false }],
          bandsPerSlice: 1,
          slices: [
            { values: [-5], band: 0 },
            { values: [-10], band: 1 },
          ],
        },
      ],
    };
    const e = catchError(() => pairMultidimensional([info(t2, 2), info(depth, 2)], opts));
    expect(e?.code).toBe('INVALID_ARGUMENT');
    expect(e?.path).toBe('rasterFunctionArguments.UnionDimension');
    const p = pairMultidimensional([info(t2, 2), info(depth, 2)], { ...opts, unionDimension: false })!;
    const v = p.multidimensional.variables[0]!;
    expect(v.dimensions.map((d) => d.name)).toEqual(['StdTime', 'StdZ']);
    expect(v.slices.map((s) => s.values)).toEqual([
      [Date.UTC(2002, 0, 1), -5],
      [Date.UTC(2002, 0, 1), -10],
      [Date.UTC(2003, 0, 1), -5],
      [Date.UTC(2003, 0, 1), -10],
    ]);
    expect(p.bands).toEqual([
      [0, 0, 1, 1],
      [0, 1, 0, 1],
    ]);
  });

  it('fails clearly when no slice is common or a plain input cannot be broadcast', () => {
    const far = timeSeriesMultidim('temp', ['1990-01-01']);
    expect(catchError(() => pairMultidimensional([info(t3, 3), info(far, 1)], opts))?.path).toBe('rasterFunctionArguments.Raster2');
    expect(catchError(() => pairMultidimensional([info(t3, 3), info(undefined, 2)], opts))?.path).toBe('rasterFunctionArguments.Raster2');
  });
});

describe('timeSeriesOf', () => {
  it('takes single-band variables with the same dates as the bands of one series', () => {
    const a = timeSeriesMultidim('red', ['2001-01-01', '2002-01-01']).variables[0]!;
    const b = {
      ...timeSeriesMultidim('nir', ['2001-01-01', '2002-01-01']).variables[0]!,
      slices: [
        { values: [Date.UTC(2001, 0, 1)], band: 2 },
        { values: [Date.UTC(2002, 0, 1)], band: 3 },
      ],
    };
    const ts = timeSeriesOf({ variables: [a, b] });
    if (typeof ts === 'string') throw new Error(ts);
    expect(ts.bandsPerStep).toBe(2);
    expect(Array.from(ts.band)).toEqual([0, 2, 1, 3]);
    expect(typeof timeSeriesOf({ variables: [{ ...a, dimensions: [{ name: 'StdZ', time: false }] }] })).toBe('string');
  });
});

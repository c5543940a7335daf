import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../../core/errors.js';
import { spatialReferenceOfWkid } from '../../../core/spatial-reference.js';
import { naturalBreaks, quantileBreaks } from '../../map/classify.js';
import type { MapService } from '../../map/model.js';
import { field, featureLayer, rasterLayer, sqliteTable, standaloneTable, testContext, testMap } from '../../../../test/info-map.js';
import { testSite, type TestSite } from '../../../../test/site.js';
import { encodeResponseEnvelope } from '../codec.js';
import type { SoapObject, SoapResult, SoapValue } from '../operation.js';
import { operationSignature } from '../signatures.js';
import { classHandlers, labToRgb, rampColors, rgbaOfSoapColor, rgbToLab, soapRendererOf } from './classes.js';

const DEM = `${import.meta.dirname}/../../../../golden/data/olinda_dem_utm25s.tif`;
const hasDem = existsSync(DEM);

const obj = (v: SoapValue): SoapObject => v as SoapObject;
const arr = (v: SoapValue): SoapObject[] => v as SoapObject[];
const dbl = (v: SoapValue): number => (typeof v === 'number' ? v : ((v as { value: number }).value ?? Number.NaN));

async function fault(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    return e as EngineError;
  }
  throw new Error('expected a fault');
}

// Elevations with three clear groups, a population per row, a name and a kind.
const ELEV = [2, 3, 4, 5, 5, 6, 31, 33, 35, 36, 70, 72, 75, 80, 88, 4, 34];
const POP = [10, 20, 10, 40, 50, 10, 10, 20, 30, 40, 50, 60, 70, 80, 90, 0, 20];

let site: TestSite;
let service: MapService;

beforeAll(async () => {
  site = await testSite();
  const rows = ELEV.map((e, i) => ({
    id: i + 1,
    attributes: { ELEV: e, POP: POP[i]!, NAME: `n${i % 4}`, KIND: i % 2 === 0 ? 'even' : 'odd' },
    geometry: {
      type: 'Polygon' as const,
      coordinates: [
        [
          [i * 10, 0],
          [i * 10 + 1 + i, 0],
          [i * 10 + 1 + i, 10],
          [i * 10, 10],
          [i * 10, 0],
        ],
      ],
    },
  }));
  const parcels = sqliteTable(rows, 'polygon', [
    field('ELEV', 'geoFieldTypeDouble'),
    field('POP', 'geoFieldTypeInteger'),
    field('NAME', 'geoFieldTypeString'),
    field('KIND', 'geoFieldTypeString'),
  ]);
  const points = sqliteTable(
    [
      { id: 1, attributes: { V: 1 }, geometry: { type: 'Point', coordinates: [0, 0] } },
      { id: 2, attributes: { V: 2 }, geometry: { type: 'Point', coordinates: [1, 1] } },
    ],
    'point',
    [field('V', 'geoFieldTypeInteger')],
  );
  const layers = [
    featureLayer(0, 'Parcels', parcels, { type: 'simple' }),
    featureLayer(1, 'Points', points, { type: 'simple' }),
    ...(hasDem ? [await rasterLayer(2, 'Relief', DEM)] : []),
  ];
  const table = sqliteTable(
    [1, 2, 3, 4].map((v) => ({ id: v, attributes: { SCORE: v * 10 } })),
    null,
    [field('SCORE', 'geoFieldTypeInteger')],
  );
  service = testMap(
    layers,
    spatialReferenceOfWkid(32725)!,
    { xmin: 0, ymin: 0, xmax: 200, ymax: 10 },
    { tables: [standaloneTable(3, 'Scores', table)] },
  );
});

afterAll(async () => {
  await site?.store.close?.();
});

/** GenerateDataClasses, its answer encoded with the schema's codec (a value that does not fit the type table fails the test). */
async function generate(
  def: SoapObject,
  desc: SoapObject = { $type: 'LayerDescription', LayerID: 0, DefinitionExpression: '' },
): Promise<SoapResult> {
  const r = await classHandlers['GenerateDataClasses']!(testContext(site, service), {
    MapName: 'Layers',
    MapTableDescription: desc,
    DataClassificationDef: def,
  });
  expect(encodeResponseEnvelope(operationSignature('GenerateDataClasses')!, r)).toContain('<tns:GenerateDataClassesResponse>');
  return r;
}

const breaksDef = (method: string, extra: Record<string, SoapValue> = {}): SoapObject => ({
  $type: 'ClassBreaksDef',
  ClassificationField: 'ELEV',
  ClassificationMethod: method,
  BreakCount: 3,
  ...extra,
});

const breaksOf = (r: SoapObject): number[] => arr(r['ClassBreakInfos']).map((i) => dbl(i['ClassMaximumValue']));

describe('GenerateDataClasses: class breaks', () => {
  it('natural breaks: the optimal classes of the field, with labels, bounds and coloured symbols', async () => {
    const r = obj((await generate(breaksDef('geoClassifyNaturalBreaks')))['Result']);
    expect(r.$type).toBe('ClassBreaksRenderer');
    expect(r['Field']).toBe('ELEV');
    expect(dbl(r['MinimumValue'])).toBe(2);
    expect(breaksOf(r)).toEqual([6, 36, 88]);
    expect(breaksOf(r)).toEqual(naturalBreaks(Float64Array.from(ELEV), 3).breaks);
    const infos = arr(r['ClassBreakInfos']);
    expect(infos.map((i) => i['Label'])).toEqual(['2 - 6', '6 - 36', '36 - 88']);
    expect(infos.map((i) => dbl(i['ClassMinimumValue']))).toEqual([2, 6, 36]);
    const symbols = infos.map((i) => obj(i['Symbol']));
    expect(symbols.every((s) => s.$type === 'SimpleFillSymbol')).toBe(true);
    // The default ramp: light yellow to dark red.
    expect(obj(symbols[0]!['Color'])).toMatchObject({ Red: 255, Green: 255, Blue: 190 });
    expect(obj(symbols[2]!['Color'])).toMatchObject({ Red: 168, Green: 0, Blue: 0 });
  });
  it('equal interval and quantile', async () => {
    const eq = obj((await generate(breaksDef('geoClassifyEqualInterval', { BreakCount: 4 })))['Result']);
    expect(breaksOf(eq)).toEqual([23.5, 45, 66.5, 88]);
    const q = obj((await generate(breaksDef('geoClassifyQuantile', { BreakCount: 4 })))['Result']);
    expect(breaksOf(q)).toEqual(quantileBreaks(Float64Array.from(ELEV), 4).breaks);
  });
  it('standard deviation: classes about the mean, labelled in deviations', async () => {
    const r = obj((await generate(breaksDef('geoClassifyStandardDeviation', { StandardDeviationInterval: 1 })))['Result']);
    const labels = arr(r['ClassBreakInfos']).map((i) => i['Label']);
    expect(labels[0]).toMatch(/^< -0\.5 Std\. Dev\.$/);
    expect(labels).toContain('-0.5 - 0.5 Std. Dev. (Mean)');
    expect(labels[labels.length - 1]).toMatch(/^> .* Std\. Dev\.$/);
    const mean = ELEV.reduce((a, b) => a + b, 0) / ELEV.length;
    const sd = Math.sqrt(ELEV.reduce((a, b) => a + (b - mean) ** 2, 0) / ELEV.length);
    expect(breaksOf(r)[0]).toBeCloseTo(mean - 0.5 * sd, 9);
  });
  it('normalised by a field, by the percent of total and by the log', async () => {
    const byField = obj((await generate(breaksDef('geoClassifyEqualInterval', { NormalizationField: 'POP', BreakCount: 2 })))['Result']);
    expect(byField).toMatchObject({ NormalizationField: 'POP', NormalizationType: 'geoNormalizeByField' });
    // ELEV/POP over rows with a non-zero POP.
    const ratios = ELEV.map((e, i) => e / POP[i]!).filter(Number.isFinite);
    expect(dbl(byField['MinimumValue'])).toBeCloseTo(Math.min(...ratios), 12);
    expect(breaksOf(byField)[1]).toBeCloseTo(Math.max(...ratios), 12);
    const pct = obj(
      (await generate(breaksDef('geoClassifyEqualInterval', { NormalizationType: 'geoNormalizeByPercentOfTotal', BreakCount: 2 })))[
        'Result'
      ],
    );
    const total = ELEV.reduce((a, b) => a + b, 0);
    expect(dbl(pct['NormalizationTotal'])).toBe(total);
    expect(breaksOf(pct)[1]).toBeCloseTo((88 / total) * 100, 12);
    const log = obj(
      (await generate(breaksDef('geoClassifyEqualInterval', { NormalizationType: 'geoNormalizeByLog', BreakCount: 2 })))['Result'],
    );
    expect(breaksOf(log)[1]).toBeCloseTo(Math.log10(88), 12);
    const area = obj(
      (await generate(breaksDef('geoClassifyEqualInterval', { NormalizationType: 'geoNormalizeByArea', BreakCount: 1 })))['Result'],
    );
    // Row i has area (1 + i) * 10.
    const perArea = ELEV.map((e, i) => e / ((1 + i) * 10));
    expect(dbl(area['MinimumValue'])).toBeCloseTo(Math.min(...perArea), 12);
  });
  it('a definition expression limits the rows; a base symbol and a ramp colour the classes', async () => {
    const r = obj(
      (
        await generate(
          breaksDef('geoClassifyEqualInterval', {
            BreakCount: 2,
            BaseSymbol: { $type: 'SimpleLineSymbol', Width: 3, Style: 'geoSLSDash' },
            ColorRamp: {
              $type: 'AlgorithmicColorRamp',
              Algorithm: 'geoHSVAlgorithm',
              FromColor: { $type: 'HsvColor', Hue: 0, Saturation: 100, Value: 100 },
              ToColor: { $type: 'HsvColor', Hue: 240, Saturation: 100, Value: 100 },
            },
          }),
          { $type: 'LayerDescription', LayerID: 0, DefinitionExpression: 'ELEV < 50' },
        )
      )['Result'],
    );
    expect(breaksOf(r)).toEqual([19, 36]);
    const syms = arr(r['ClassBreakInfos']).map((i) => obj(i['Symbol']));
    expect(syms[0]).toMatchObject({ $type: 'SimpleLineSymbol', Width: 3, Style: 'geoSLSDash', Color: { Red: 255, Green: 0, Blue: 0 } });
    expect(syms[1]).toMatchObject({ Color: { Red: 0, Green: 0, Blue: 255 } });
  });
  it('standalone tables classify too (marker symbols for points)', async () => {
    const t = obj(
      (
        await generate(
          { ...breaksDef('geoClassifyEqualInterval'), ClassificationField: 'score' },
          { $type: 'StandaloneTableDescription', ID: 3 },
        )
      )['Result'],
    );
    expect(breaksOf(t)).toEqual([20, 30, 40]);
    const p = obj(
      (
        await generate(
          { ...breaksDef('geoClassifyEqualInterval'), ClassificationField: 'V', BreakCount: 2 },
          { $type: 'LayerDescription', LayerID: 1 },
        )
      )['Result'],
    );
    expect(obj(arr(p['ClassBreakInfos'])[0]!['Symbol'])['$type']).toBe('SimpleMarkerSymbol');
  });
  it('refuses text fields, unknown fields, bad counts, raster layers and empty data', async () => {
    expect((await fault(generate({ ...breaksDef('geoClassifyQuantile'), ClassificationField: 'NAME' }))).issues[0]?.path).toBe(
      'DataClassificationDef/ClassificationField',
    );
    expect((await fault(generate({ ...breaksDef('geoClassifyQuantile'), ClassificationField: 'NOPE' }))).message).toBe(
      "Field 'NOPE' does not exist.",
    );
    expect((await fault(generate(breaksDef('geoClassifyQuantile', { BreakCount: 0 })))).issues[0]?.path).toBe(
      'DataClassificationDef/BreakCount',
    );
    expect((await fault(generate(breaksDef('geoClassifyQuantile', { BreakCount: 33 })))).issues[0]?.path).toBe(
      'DataClassificationDef/BreakCount',
    );
    if (hasDem)
      expect((await fault(generate(breaksDef('geoClassifyQuantile'), { $type: 'LayerDescription', LayerID: 2 }))).message).toContain(
        'raster layer',
      );
    expect(
      (
        await fault(
          generate(breaksDef('geoClassifyQuantile'), { $type: 'LayerDescription', LayerID: 0, DefinitionExpression: 'ELEV > 1000' }),
        )
      ).message,
    ).toContain('no values to classify');
    expect((await fault(generate(breaksDef('geoClassifyQuantile'), { $type: 'LayerDescription', LayerID: 9 }))).code).toBe('NOT_FOUND');
  });
});

describe('GenerateDataClasses: unique values', () => {
  it('one field: its distinct values sorted, each with a colour of the ramp', async () => {
    const r = obj(
      (
        await generate({
          $type: 'UniqueValuesDef',
          Fields: ['NAME'],
          ColorRamp: {
            $type: 'PresetColorRamp',
            Colors: [
              { $type: 'RgbColor', Red: 0, Green: 0, Blue: 0 },
              { $type: 'RgbColor', Red: 255, Green: 255, Blue: 255 },
            ],
          },
        })
      )['Result'],
    );
    expect(r).toMatchObject({ $type: 'UniqueValueRenderer', Field1: 'NAME', DefaultLabel: '<all other values>' });
    const infos = arr(r['UniqueValueInfos']);
    expect(infos.map((i) => i['Value'])).toEqual(['n0', 'n1', 'n2', 'n3']);
    expect(infos.map((i) => obj(obj(i['Symbol'])['Color'])['Red'])).toEqual([0, 85, 170, 255]);
  });
  it('several fields joined by the delimiter', async () => {
    const r = obj((await generate({ $type: 'UniqueValuesDef', Fields: ['KIND', 'NAME'], FieldDelimiter: '|' }))['Result']);
    expect(r).toMatchObject({ Field1: 'KIND', Field2: 'NAME', FieldDelimiter: '|' });
    expect(arr(r['UniqueValueInfos']).map((i) => i['Value'])).toEqual(['even|n0', 'even|n2', 'odd|n1', 'odd|n3']);
  });
  it('numbers sort as numbers; random ramps are repeatable', async () => {
    const a = obj((await generate({ $type: 'UniqueValuesDef', Fields: ['POP'] }))['Result']);
    expect(arr(a['UniqueValueInfos']).map((i) => i['Value'])).toEqual(['0', '10', '20', '30', '40', '50', '60', '70', '80', '90']);
    const b = obj((await generate({ $type: 'UniqueValuesDef', Fields: ['POP'] }))['Result']);
    expect(b).toEqual(a);
  });
  it('refuses no fields and unknown definitions', async () => {
    expect((await fault(generate({ $type: 'UniqueValuesDef', Fields: [] }))).issues[0]?.path).toBe('DataClassificationDef/Fields');
    expect((await fault(generate({ $type: 'OtherDef' }))).issues[0]?.path).toBe('DataClassificationDef');
  });
});

describe('colour ramps', () => {
  it('HSV ramps pass through the hues between their ends', () => {
    const c = rampColors(
      {
        $type: 'AlgorithmicColorRamp',
        Algorithm: 'geoHSVAlgorithm',
        FromColor: { $type: 'HsvColor', Hue: 0, Saturation: 100, Value: 100 },
        ToColor: { $type: 'HsvColor', Hue: 120, Saturation: 100, Value: 100 },
      },
      3,
      'r',
    );
    expect(c).toEqual([
      [255, 0, 0, 255],
      [255, 255, 0, 255],
      [0, 255, 0, 255],
    ]);
  });
  it('CIELab round trips and interpolates in Lab', () => {
    const colors: [number, number, number][] = [
      [0, 0, 0],
      [255, 255, 255],
      [12, 200, 77],
      [168, 0, 0],
    ];
    for (const [r, g, b] of colors) expect(labToRgb(...rgbToLab(r, g, b))).toEqual([r, g, b]);
    expect(rgbToLab(255, 255, 255)[0]).toBeCloseTo(100, 4);
    const mid = rampColors(
      {
        $type: 'AlgorithmicColorRamp',
        FromColor: { $type: 'RgbColor', Red: 0, Green: 0, Blue: 0 },
        ToColor: { $type: 'RgbColor', Red: 255, Green: 255, Blue: 255 },
      },
      3,
      'r',
    )[1]!;
    // L* 50 grey is sRGB 119, not 128.
    expect(mid).toEqual([119, 119, 119, 255]);
  });
  it('multi-part ramps follow their parts; colours of every SOAP type', () => {
    const part = (a: number, b: number): SoapObject => ({
      $type: 'AlgorithmicColorRamp',
      Algorithm: 'geoHSVAlgorithm',
      FromColor: { $type: 'RgbColor', Red: a, Green: a, Blue: a },
      ToColor: { $type: 'RgbColor', Red: b, Green: b, Blue: b },
    });
    const c = rampColors({ $type: 'MultiPartColorRamp', ColorRamps: [part(0, 100), part(200, 255)] }, 2, 'r');
    expect(c).toEqual([
      [0, 0, 0, 255],
      [255, 255, 255, 255],
    ]);
    expect(rgbaOfSoapColor({ $type: 'GrayColor', GrayLevel: 9, AlphaValue: 7 }, 'c')).toEqual([9, 9, 9, 7]);
    expect(rgbaOfSoapColor({ $type: 'CmykColor', Cyan: 100, Magenta: 0, Yellow: 0, Black: 0 }, 'c')).toEqual([0, 255, 255, 255]);
    expect(rgbaOfSoapColor({ $type: 'HlsColor', Hue: 240, Lightness: 50, Saturation: 100 }, 'c')).toEqual([0, 0, 255, 255]);
  });
});

describe('renderers as SOAP', () => {
  it('class breaks: bounds, symbols and normalisation', () => {
    const r = soapRendererOf(
      {
        type: 'classBreaks',
        field: 'ELEV',
        minValue: 0,
        normalizationType: 'esriNormalizeByField',
        normalizationField: 'POP',
        classBreakInfos: [
          { classMaxValue: 30, label: 'low', symbol: { type: 'esriSLS', style: 'esriSLSSolid', color: [1, 2, 3, 255], width: 0.8 } },
          {
            classMaxValue: 60,
            label: 'high',
            symbol: {
              type: 'esriSMS',
              style: 'esriSMSTriangle',
              color: [4, 5, 6, 128],
              size: 6,
              outline: { color: [0, 0, 0, 255], width: 1 },
            },
          },
        ],
      },
      'renderer',
    );
    expect(r).toMatchObject({
      $type: 'ClassBreaksRenderer',
      Field: 'ELEV',
      MinimumValue: 0,
      NormalizationField: 'POP',
      NormalizationType: 'geoNormalizeByField',
    });
    const infos = arr(r['ClassBreakInfos']);
    expect(infos.map((i) => [i['ClassMinimumValue'], i['ClassMaximumValue']])).toEqual([
      [0, 30],
      [30, 60],
    ]);
    expect(obj(infos[0]!['Symbol'])).toEqual({
      $type: 'SimpleLineSymbol',
      Color: { $type: 'RgbColor', Red: 1, Green: 2, Blue: 3 },
      Width: 0.8,
      Style: 'geoSLSSolid',
    });
    expect(obj(infos[1]!['Symbol'])).toMatchObject({
      $type: 'SimpleMarkerSymbol',
      Style: 'geoSMSDiamond',
      Outline: true,
      OutlineSize: 1,
      Color: { AlphaValue: 128 },
    });
    expect(() => soapRendererOf({ type: 'heatmap' }, 'renderer')).toThrow(EngineError);
    // Styles the SOAP enumerations lack become their nearest SOAP style.
    const styles = soapRendererOf(
      {
        type: 'uniqueValue',
        field1: 'K',
        uniqueValueInfos: [
          {
            value: 'a',
            symbol: { type: 'esriSFS', style: 'esriSFSHollow', outline: { type: 'esriSLS', style: 'esriSLSLongDashDot', width: 1 } },
          },
          { value: 'b', symbol: { type: 'esriSLS', style: 'esriSLSShortDot', width: 1 } },
        ],
      },
      'renderer',
    );
    const [a, b] = arr(styles['UniqueValueInfos']).map((i) => obj(i['Symbol']));
    expect(a).toMatchObject({ Style: 'geoSFSNull', Outline: { Style: 'geoSLSDashDot' } });
    expect(b).toMatchObject({ Style: 'geoSLSDot' });
  });
});

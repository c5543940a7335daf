// Expected values derived by hand from the published coefficient tables in the spec, not from our output.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction, warningMessages } from '../../../test/helpers.js';
import { arithmetic } from '../local/arithmetic.js';
import { clip } from '../geometry/clip.js';
import { sensorOf, tasseledCap } from './tasseled-cap.js';

const src = (bandCount: number, extra: Record<string, unknown>, pixelType: 'U8' | 'U16' | 'F32' = 'U8') =>
  rasterOf({ width: 1, height: 1, bandCount, pixelType, extra: { radiometry: 'source', ...extra } }, (_x, _y, b) => b + 1);

describe('TasseledCap', () => {
  it('ETM+ (Huang et al. 2002) from the sensor metadata, bands 1..6 = ETM+ 1,2,3,4,5,7', async () => {
    const r = await runFunction(tasseledCap, {}, [src(6, { sensorName: 'Landsat 7 ETM+' })]);
    const br = 0.3561 * 1 + 0.3972 * 2 + 0.3904 * 3 + 0.6966 * 4 + 0.2286 * 5 + 0.1596 * 6;
    expect(r.info.bandNames).toEqual(['Brightness', 'Greenness', 'Wetness']);
    expect(r.value(0, 0, 0)).toBeCloseTo(br, 5);
    expect(warningMessages(r.node.plan.warnings).join(' ')).toMatch(/reflectance/);
  });

  it('MSS yellow stuff; TM picks set A for integers and set B for floats; 7-band TM skips band 6', async () => {
    const mss = await runFunction(tasseledCap, { SensorName: 'Landsat MSS' }, [src(4, {})]);
    expect(mss.info.bandNames![2]).toBe('YellowStuff');
    expect(mss.value(0, 0, 2)).toBeCloseTo(-0.829 + 2 * 0.522 - 3 * 0.039 + 4 * 0.194, 5);
    const tmA = await runFunction(tasseledCap, { SensorName: 'Landsat 5 TM' }, [src(7, {})]);
    expect(tmA.value(0, 0, 0)).toBeCloseTo(0.3037 + 2 * 0.2793 + 3 * 0.4743 + 4 * 0.5585 + 5 * 0.5082 + 7 * 0.1863, 5);
    const tmB = await runFunction(tasseledCap, { SensorName: 'TM' }, [src(6, {}, 'F32')]);
    expect(tmB.value(0, 0, 1)).toBeCloseTo(-0.1603 - 2 * 0.2819 - 3 * 0.4934 + 4 * 0.794 - 5 * 0.0002 - 6 * 0.1446, 5);
  });

  it('recognises sensor spellings', () => {
    expect(sensorOf('LANDSAT_8')?.label).toBe('Landsat 8 OLI');
    expect(sensorOf('WV02')?.label).toBe('WorldView-2');
    expect(sensorOf('Landsat 4-5 TM')?.label).toBe('Landsat TM');
    expect(sensorOf('Sentinel-2A')?.label).toBe('Sentinel-2');
    expect(sensorOf('SPOT 5')).toBeUndefined();
  });

  it('passes through Clip (values unchanged) but refuses altered values', () => {
    const s = src(6, { sensorName: 'Landsat 7 ETM+' });
    const clipped = applyFunction(clip, { ClippingGeometry: { xmin: 0, ymin: -1, xmax: 1, ymax: 0 } }, [s]);
    expect(applyFunction(tasseledCap, {}, [clipped]).info.bandCount).toBe(3);
    const altered = applyFunction(arithmetic, { Raster2: 2, Operation: 3 }, [s, rasterOf({ width: 1, height: 1 }, () => 2)]);
    const e = catchError(() => applyFunction(tasseledCap, { SensorName: 'Landsat 7 ETM+' }, [altered]));
    expect(e?.code).toBe('UNSUPPORTED_INPUT');
    expect(e?.path).toBe('rasterFunctionArguments.Raster');
  });

  it('refuses unknown sensors, wrong band counts and 8-bit commercial products', () => {
    const cases: [Record<string, unknown>, ReturnType<typeof src>, string][] = [
      [{ SensorName: 'SPOT 5' }, src(4, {}), 'SensorName'],
      [{}, src(4, {}), 'Raster'],
      [{ SensorName: 'IKONOS' }, src(4, {}), 'Raster'],
      [{ SensorName: 'RapidEye' }, src(4, {}), 'Raster'],
    ];
    for (const [args, input, field] of cases) {
      const e = catchError(() => applyFunction(tasseledCap, args, [input]));
      expect(e?.code, JSON.stringify(args)).toBe('UNSUPPORTED_INPUT');
      expect(e?.path).toBe(`rasterFunctionArguments.${field}`);
    }
    expect(applyFunction(tasseledCap, { SensorName: 'IKONOS' }, [src(4, {}, 'U16')]).info.bandCount).toBe(3);
  });
});

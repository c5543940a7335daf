// Symbol geometry checked by hand from the documented shapes (vector-field-renderer.ts header):
// an arrow of length L centred on its cell, head 0.35 L long and 0.36 L wide; a calm ring of
// radius 0.15 L; one symbol per SymbolTileSize cell.
import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction, tiledVersusWhole, type Result } from '../../../test/helpers.js';
import { vectorFieldRenderer } from './vector-field-renderer.js';

const alpha = (r: Result, x: number, y: number): number => r.value(x, y, 3);

/** A W x H two-band raster of the constant vector (a, b). */
const field = (a: number, b: number, W = 40, H = 40, mask?: Uint8Array) =>
  rasterOf({ width: W, height: H, bandCount: 2 }, (_x, _y, band) => (band === 0 ? a : b), mask);

const fixed = { MinimumMagnitude: 0, MaximumMagnitude: 10, MinimumSymbolSize: 10, MaximumSymbolSize: 30, SymbolTileSize: 40 };

describe('VectorFieldRenderer', () => {
  it('draws one black arrow per cell, head where the flow goes (flow "to")', async () => {
    // U = 10, V = 0: east, full size L = 30, centred on (20, 20): tail x = 5, tip x = 35.
    const r = await runFunction(vectorFieldRenderer, { ...fixed, IsUVComponents: true, MassFlowAngleRepresentation: 1 }, [field(10, 0)]);
    expect(r.info.bandCount).toBe(4);
    expect(r.info.pixelType).toBe('U8');
    expect(alpha(r, 20, 19)).toBe(255); // shaft (pixel centre 20.5, 19.5: 0.5 px from the axis)
    expect([r.value(20, 19, 0), r.value(20, 19, 1), r.value(20, 19, 2)]).toEqual([0, 0, 0]);
    expect(alpha(r, 6, 19)).toBe(255); // near the tail
    expect(alpha(r, 2, 19)).toBe(0); // beyond the tail
    // Head base at x = 35 - 10.5 = 24.5, half width 5.4: (26.5, 23.5) lies inside the head...
    expect(alpha(r, 26, 23)).toBe(255);
    // ...while the mirrored point next to the tail is off the shaft.
    expect(alpha(r, 13, 23)).toBe(0);
    expect(alpha(r, 38, 38)).toBe(0);
  });

  it('"from" (the default) turns the arrow around', async () => {
    const r = await runFunction(vectorFieldRenderer, { ...fixed, IsUVComponents: true }, [field(10, 0)]);
    expect(alpha(r, 13, 23)).toBe(255);
    expect(alpha(r, 26, 23)).toBe(0);
  });

  it('reads magnitude/direction bands in the angular system: 0 = north', async () => {
    // Magnitude 10, direction 0 (to the north, flow "to"): the head is at the top.
    const r = await runFunction(vectorFieldRenderer, { ...fixed, MassFlowAngleRepresentation: 1 }, [field(10, 0)]);
    expect(alpha(r, 23, 13)).toBe(255);
    expect(alpha(r, 23, 26)).toBe(0);
    // Arithmetic system: 0 = east.
    const e = await runFunction(vectorFieldRenderer, { ...fixed, MassFlowAngleRepresentation: 1, ReferenceSystem: 1 }, [field(10, 0)]);
    expect(alpha(e, 26, 23)).toBe(255);
  });

  it('sizes symbols linearly by magnitude between the size bounds', async () => {
    // Magnitude 0 -> L = 10: tail at x = 15, so x = 12 is empty; at magnitude 10, L = 30 reaches it.
    const small = await runFunction(vectorFieldRenderer, { ...fixed, IsUVComponents: true }, [field(0.0001, 0)]);
    expect(alpha(small, 16, 19)).toBe(255);
    expect(alpha(small, 12, 19)).toBe(0);
    const big = await runFunction(vectorFieldRenderer, { ...fixed, IsUVComponents: true }, [field(10, 0)]);
    expect(alpha(big, 12, 19)).toBe(255);
  });

  it('wind barb: calm below 5 knots is a ring of radius 0.15 L', async () => {
    const r = await runFunction(vectorFieldRenderer, { ...fixed, SymbologyName: 'Wind Barb', IsUVComponents: true }, [field(3, 0)]);
    expect(alpha(r, 20, 20)).toBe(0); // centre of the ring (0.7 px from the centre... inside the hole)
    expect(alpha(r, 24, 19)).toBe(255); // 4.5 px from (20, 20) = the ring (radius 4.5)
    expect(alpha(r, 30, 19)).toBe(0);
  });

  it('wind barb: the staff points where the wind comes from', async () => {
    // Flow to the east ("to" representation of the data): wind from the west, staff to the west.
    const r = await runFunction(
      vectorFieldRenderer,
      { ...fixed, SymbologyName: 'Wind Barb', IsUVComponents: true, MassFlowAngleRepresentation: 1 },
      [field(65, 0)],
    );
    expect(alpha(r, 5, 19)).toBe(255);
    expect(alpha(r, 35, 19)).toBe(0);
  });

  it('classified styles colour and size by class', async () => {
    const args = { ...fixed, SymbologyName: 'Ocean Current (MetersPerSecond)', IsUVComponents: true };
    const slow = await runFunction(vectorFieldRenderer, args, [field(0.3, 0)]); // class 0
    const fast = await runFunction(vectorFieldRenderer, args, [field(3, 0)]); // last class (3)
    expect([slow.value(20, 19, 0), slow.value(20, 19, 2)]).not.toEqual([fast.value(20, 19, 0), fast.value(20, 19, 2)]);
    expect(alpha(slow, 12, 19)).toBe(0); // class 0: L = MinimumSymbolSize 10
    expect(alpha(fast, 12, 19)).toBe(255); // last class: L = 30
  });

  it('Vector Average draws a cell only when at least half its pixels are valid', async () => {
    const half = new Uint8Array(40 * 40).map((_, i) => (i % 40 < 20 ? 1 : 0));
    const drawn = await runFunction(vectorFieldRenderer, { ...fixed, IsUVComponents: true }, [field(10, 0, 40, 40, half)]);
    expect(alpha(drawn, 20, 19)).toBe(255);
    const less = new Uint8Array(40 * 40).map((_, i) => (i % 40 < 19 ? 1 : 0));
    const none = await runFunction(vectorFieldRenderer, { ...fixed, IsUVComponents: true }, [field(10, 0, 40, 40, less)]);
    expect(Math.max(...none.block.bands[3]!)).toBe(0);
    // Nearest neighbour only looks at the centre pixel (20, 20), which is NoData here.
    const nearest = await runFunction(vectorFieldRenderer, { ...fixed, IsUVComponents: true, CalculationMethod: 'Nearest neighbor' }, [
      field(10, 0, 40, 40, half),
    ]);
    expect(Math.max(...nearest.block.bands[3]!)).toBe(0);
  });

  it('symbols straddling tile edges render seamlessly (every method and style)', async () => {
    // Symbols (up to 36 px) larger than their 16 px cells, crossing many 7x5 tile edges.
    const swirl = rasterOf({ width: 61, height: 47, bandCount: 2 }, (x, y, b) => (b === 0 ? 23 - y + (x % 5) : x - 30));
    for (const SymbologyName of ['Single Arrow', 'Simple Scalar', 'Wind Barb', 'Beaufort Wind (Knots)']) {
      for (const CalculationMethod of ['Vector Average', 'Bilinear', 'Cubic', 'Maximum']) {
        const node = applyFunction(
          vectorFieldRenderer,
          {
            IsUVComponents: true,
            SymbolTileSize: 16,
            MinimumSymbolSize: 8,
            MaximumSymbolSize: 36,
            MinimumMagnitude: 0,
            MaximumMagnitude: 40,
            SymbologyName,
            CalculationMethod,
          },
          [swirl],
        );
        expect(await tiledVersusWhole(node, [7, 5]), `${SymbologyName} ${CalculationMethod}`).toBeUndefined();
      }
    }
    // And a symbol does cross the tile edge x = 35 (a multiple of 7) in the whole render.
    const whole = await runFunction(vectorFieldRenderer, { ...fixed, SymbolTileSize: 16, MaximumSymbolSize: 36, IsUVComponents: true }, [
      swirl,
    ]);
    let crossing = 0;
    for (let y = 0; y < 47; y++) if (alpha(whole, 34, y) > 0 && alpha(whole, 35, y) > 0) crossing++;
    expect(crossing).toBeGreaterThan(0);
  });

  it("SymbolTileSizeUnits: metres through the cell's ground width (geographic: on WGS 84 at the middle row)", () => {
    const cellOf = (args: Record<string, unknown>, o: Parameters<typeof rasterOf>[0]) =>
      (
        applyFunction(vectorFieldRenderer, { IsUVComponents: true, ...args }, [rasterOf({ ...o, bandCount: 2 }, () => 1)]).plan.params as {
          cell: number;
        }
      ).cell;
    // UTM, 30 m cells: 600 m is 20 pixels, 0.5 km 17 (16.7), 60 map units 2.
    const utm = { width: 50, height: 50, cellSize: 30 };
    expect(cellOf({ SymbolTileSize: 600, SymbolTileSizeUnits: 'Meters' }, utm)).toBe(20);
    expect(cellOf({ SymbolTileSize: 0.5, SymbolTileSizeUnits: 'Kilometers' }, utm)).toBe(17);
    expect(cellOf({ SymbolTileSize: 60, SymbolTileSizeUnits: 'MapUnits' }, utm)).toBe(2);
    // Geographic, 0.001 degree cells with the middle row centred on 60 N: a cell is 55.80 m wide there
    // (WGS 84: pi/180 a cos(phi) / sqrt(1 - e2 sin^2 phi) = 55800.0 m per degree), so 2000 m is 35.8 -> 36
    // pixels; a flat equatorial degree (111.3 m cells) would have made it 18.
    const geo = { width: 51, height: 51, cellSize: 0.001, geographic: true, origin: { x: 10, y: 60.0255 } };
    expect(cellOf({ SymbolTileSize: 2000, SymbolTileSizeUnits: 'Meters' }, geo)).toBe(36);
    // Decimal degrees are the geographic raster's own unit: 0.02 degree is 20 pixels at any latitude.
    expect(cellOf({ SymbolTileSize: 0.02, SymbolTileSizeUnits: 'DecimalDegrees' }, geo)).toBe(20);
  });

  it('rejects bad arguments with their paths', () => {
    const one = rasterOf({ width: 4, height: 4 }, () => 1);
    let e = catchError(() => applyFunction(vectorFieldRenderer, {}, [one]));
    expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.DirectionBandID']);
    e = catchError(() => applyFunction(vectorFieldRenderer, { MinimumSymbolSize: 20, MaximumSymbolSize: 10 }, [field(1, 1)]));
    expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.MaximumSymbolSize']);
    e = catchError(() => applyFunction(vectorFieldRenderer, { SymbologyName: 'Wind Sock' }, [field(1, 1)]));
    expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.SymbologyName']);
    e = catchError(() => applyFunction(vectorFieldRenderer, { SymbolTileSize: 0 }, [field(1, 1)]));
    expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', 'rasterFunctionArguments.SymbolTileSize']);
  });
});

/**
 * The evaluator's invariant, for every registered function: rendering in odd-sized tiles equals
 * rendering whole, bit for bit (values of valid pixels and the mask). Every function must have at
 * least one case here; argument sets that take different code paths each get one.
 */
import { describe, expect, it } from 'vitest';
import { builtinFunctions } from '../src/functions/index.js';
import type { RasterNode } from '../src/graph/types.js';
import { applyFunction, constant, rasterOf, tiledVersusWhole } from './helpers.js';

// A DEM-like surface with relief in every direction and NoData holes (single pixels and a block).
const W = 61;
const H = 47;
const holes = new Uint8Array(W * H).fill(1);
for (const [x, y] of [[10, 10], [11, 10], [30, 5], [0, 20], [60, 46], [45, 30]] as const) holes[y * W + x] = 0;
for (let y = 20; y < 24; y++) for (let x = 25; x < 29; x++) holes[y * W + x] = 0;
const surface = (x: number, y: number): number => 500 + 120 * Math.sin(x / 7) * Math.cos(y / 5) + 3 * x - 2 * y + ((x * 7919 + y * 104729) % 13);

const dem = rasterOf({ width: W, height: H, cellSize: 30 }, surface, holes);
const demGeo = rasterOf({ width: W, height: H, cellSize: 1 / 1200, geographic: true, origin: { x: -84.4, y: 36.7 } }, surface, holes);
const bands = rasterOf({ width: W, height: H, cellSize: 30, bandCount: 3, pixelType: 'U8' }, (x, y, b) => (x * 3 + y * 5 + b * 40) % 256, holes);
const s16 = rasterOf({ width: W, height: H, cellSize: 30, pixelType: 'S16' }, (x, y) => x * 11 - y * 13);

interface Case {
  readonly args: Record<string, unknown>;
  readonly inputs: readonly RasterNode[];
}

const CASES: Record<string, readonly Case[]> = {
  Hillshade: [
    { args: {}, inputs: [dem] },
    { args: { HillshadeType: 1 }, inputs: [dem] },
    { args: { SlopeType: 3, Azimuth: 100, Altitude: 20, ZFactor: 2 }, inputs: [dem] },
    { args: { RemoveEdgeEffect: true }, inputs: [dem] },
    { args: {}, inputs: [demGeo] },
    { args: { GeographicCellSize: 'Vendor111000', SlopeType: 3 }, inputs: [demGeo] },
  ],
  Slope: [
    { args: {}, inputs: [dem] },
    { args: { SlopeType: 2 }, inputs: [dem] },
    { args: { SlopeType: 3 }, inputs: [dem] },
    { args: { RemoveEdgeEffect: true }, inputs: [dem] },
    { args: {}, inputs: [demGeo] },
    { args: { GeographicCellSize: 'Vendor111000' }, inputs: [demGeo] },
    { args: { SlopeType: 3, RemoveEdgeEffect: true }, inputs: [demGeo] },
  ],
  Aspect: [
    { args: {}, inputs: [dem] },
    { args: { RemoveEdgeEffect: true }, inputs: [dem] },
    { args: {}, inputs: [demGeo] },
    { args: { GeographicCellSize: 'Vendor111000' }, inputs: [demGeo] },
  ],
  Curvature: [0, 1, 2].flatMap((Type) => [
    { args: { Type, ZFactor: 2 }, inputs: [dem] },
    { args: { Type, RemoveEdgeEffect: true }, inputs: [dem] },
    { args: { Type }, inputs: [demGeo] },
    { args: { Type, GeographicCellSize: 'Vendor111000' }, inputs: [demGeo] },
  ]),
  ShadedRelief: [
    { args: {}, inputs: [dem] },
    { args: { HillshadeType: 1, Colorramp: 'Slope' }, inputs: [dem] },
    {
      args: {
        RemoveEdgeEffect: true,
        Colormap: Array.from({ length: 400 }, (_, i) => [300 + i, i % 256, (3 * i) % 256, (7 * i) % 256]).filter((e) => e[0]! % 7 !== 0),
      },
      inputs: [dem],
    },
    { args: { HillshadeType: 1 }, inputs: [demGeo] },
  ],
  SurfaceParamFunction: [
    { args: {}, inputs: [dem] },
    { args: { SurfaceCalculation: 1, AnalysisScaleWithUnits: '150 Meters' }, inputs: [dem] },
    { args: { SurfaceCalculation: 2, LocalSurface: 2, AnalysisScaleWithUnits: 90 }, inputs: [dem] },
    { args: { SurfaceCalculation: 5 }, inputs: [dem] },
    { args: { SurfaceCalculation: 9, AnalysisScaleWithUnits: 90, UseAdaptiveScale: true }, inputs: [dem] },
    { args: { SurfaceCalculation: 5, ProjectAzimuths: true, UseEquatorialAspect: true }, inputs: [demGeo] },
    { args: { SlopeType: 2 }, inputs: [demGeo] },
  ],
  ElevationVoidFill: [
    { args: {}, inputs: [dem] },
    { args: { MaxVoidWidth: 90 }, inputs: [dem] },
    { args: { MaxVoidWidth: -1 }, inputs: [dem] },
  ],
  Identity: [{ args: {}, inputs: [bands] }],
  ExtractBand: [{ args: { BandIDs: [2, 0, 0] }, inputs: [bands] }],
  CompositeBand: [{ args: {}, inputs: [bands, dem, s16] }],
  Arithmetic: [1, 2, 3, 4, 5, 6].flatMap((Operation) => [
    { args: { Operation }, inputs: [dem, s16] },
    { args: { Operation }, inputs: [bands, constant([2])] },
  ]),
};

describe('tiled rendering equals whole rendering', () => {
  it('every registered function has a tiling case', () => {
    expect(builtinFunctions.map((f) => f.name).filter((n) => !(n in CASES))).toEqual([]);
  });

  for (const fn of builtinFunctions) {
    for (const [i, c] of (CASES[fn.name] ?? []).entries()) {
      it(`${fn.name} #${i} ${JSON.stringify(c.args)}`, async () => {
        const node = applyFunction(fn, c.args, c.inputs);
        for (const tile of [[37, 53], [7, 5], [1, 3], [16, 16]] as [number, number][]) {
          expect(await tiledVersusWhole(node, tile), `tile ${tile.join('x')}`).toBeUndefined();
        }
      });
    }
  }
});
